"""Sphinx configuration: ``tox -e docs`` builds doc/build/html with
warnings as errors."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..")))

project = "scheduler"
copyright = "the scheduler team"

extensions = [
    "oslo_config.sphinxext",
    "cli_help",
]

root_doc = "index"
exclude_patterns = ["_build"]
html_theme = "alabaster"
html_static_path = []
html_theme_options = {"description": "nova-scheduler as a service of its "
                                     "own"}
# The same help text at every width: argparse wraps to $COLUMNS.
os.environ["COLUMNS"] = "80"
