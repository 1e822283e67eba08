import warnings

# futurist imports eventlet whenever it is installed (oslo.service still
# depends on it) and eventlet warns on import. This service never uses
# eventlet (threading executor, threading backend), so the warning is noise
# on every command.
warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
