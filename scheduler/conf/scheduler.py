"""Options in [scheduler]: the service as a whole."""
from oslo_config import cfg

GROUP = "scheduler"

opts = [
    cfg.StrOpt("driver", default="filter_scheduler",
               help="Scheduler driver, by its name in the entry-point "
                    "namespace 'scheduler.driver': filter_scheduler, "
                    "chance_scheduler or caching_scheduler (or a "
                    "third-party driver)."),
    cfg.StrOpt("topic", default="scheduler", regex=r"^\S+$",
               help="RPC topic the scheduler servers consume from. Every "
                    "server on a topic competes for the same queue."),
    cfg.IntOpt("workers", default=1, min=1,
               help="Number of worker processes of one scheduler server."),
    cfg.IntOpt("periodic_task_interval", default=60, min=1,
               help="Seconds between periodic tasks, such as the caching "
                    "scheduler's refresh of host states."),
    cfg.IntOpt("service_down_time", default=60, min=1,
               help="A compute service whose last heartbeat is older than "
                    "this many seconds is considered down."),
    cfg.IntOpt("max_attempts", default=3, min=1,
               help="Attempts a client makes for one select_destinations "
                    "call when it times out (1 means no retry); also one "
                    "more than the number of alternates returned."),
    cfg.IntOpt("claim_retries", default=5, min=0,
               help="How often one request re-plans after losing a claim "
                    "race to another scheduler before it gives up with "
                    "NoValidHost."),
    cfg.IntOpt("claim_batch_size", default=16, min=1,
               help="Most claims one worker makes in one database "
                    "transaction (group commit). Requests whose claims "
                    "queue up while another claim commits share the next "
                    "transaction and its commit; each keeps its own "
                    "outcome. Only one-node claims without a server group "
                    "or a move are batched. 1 gives every claim its own "
                    "transaction."),
    cfg.IntOpt("db_retries", default=5, min=0,
               help="How often one database transaction is retried after a "
                    "transient conflict: a deadlock (on Galera also a "
                    "certification failure), MySQL's lock wait timeout, "
                    "SQLite's 'database is locked', PostgreSQL's "
                    "serialization failure and lock timeout (and a lost "
                    "connection once db_outage_timeout is spent). Nothing "
                    "is half-written either way."),
    cfg.IntOpt("db_outage_timeout", default=30, min=0, max=600,
               help="Seconds a request or a nova cast keeps retrying its "
                    "database transactions (backing off to once a second) "
                    "while the database cannot be reached: a lost or "
                    "refused connection, a server starting up or shutting "
                    "down, as in a restart or a failover. A request or a "
                    "nova cast arriving then waits, in its own thread, and "
                    "is served once the database answers; this long after "
                    "the server began serving it (one window for all its "
                    "transactions) it fails with one line naming the "
                    "database. Keep it well under the callers' RPC "
                    "timeout: nova 34's conductor waits for "
                    "select_destinations up to its [DEFAULT] "
                    "long_rpc_timeout (1800 s; nova's casts wait for "
                    "nothing), scheduler-client and the SchedulerAPI for "
                    "[DEFAULT] rpc_response_timeout (60 s). 0: a lost "
                    "connection gets only db_retries' retries (~1.5 s). A "
                    "SIGTERM ends the wait."),
    cfg.IntOpt("db_lock_timeout", default=30, min=1, max=3600,
               help="Seconds one database statement waits for a row (on "
                    "SQLite: the database) that another session holds "
                    "locked, e.g. an operator's transaction left open, "
                    "before it fails as a transient error (retried per "
                    "db_retries, then the caller gets one line naming the "
                    "lock). Sets PostgreSQL's lock_timeout (else unlimited), "
                    "MariaDB's innodb_lock_wait_timeout and SQLite's busy "
                    "timeout. One round trip to a PostgreSQL or MariaDB "
                    "server (connecting too) waits at most this plus 5 s "
                    "for its answer: a server that stopped answering then "
                    "counts as unreachable (db_outage_timeout)."),
    cfg.IntOpt("unconfirmed_claim_ttl", default=3600, min=0,
               help="Seconds a claim made by select_destinations stays "
                    "provisional: unless the caller confirms it (the "
                    "'confirm' RPC) within this time, measured by the "
                    "database's clock, a periodic task releases it, so a "
                    "caller that died never leaks capacity. 0 makes claims "
                    "permanent at once (for callers that never confirm)."),
    cfg.IntOpt("max_instances_per_request", default=1000, min=1,
               help="Largest number of instances accepted in one request."),
    cfg.IntOpt("broker_startup_timeout", default=30, min=1,
               help="Seconds scheduler-server waits at start for the "
                    "message broker to accept its login. If none does, or "
                    "the broker refuses the credentials, the server exits "
                    "with status 1 and one line naming the broker, instead "
                    "of starting workers that retry for ever."),
    cfg.StrOpt("http_listen", default="127.0.0.1:8796",
               help="host:port of the server's HTTP listener, run by the "
                    "main process: GET /healthcheck answers 200 OK when "
                    "every worker consumes and the database answers, else "
                    "503 with the reason; GET /metrics answers every "
                    "worker's Prometheus metrics. Loopback by default (8796 is "
                    "taken by no OpenStack service); empty turns the "
                    "listener off. An address that cannot be bound stops "
                    "the start-up with one line naming it."),
]


def register_opts(conf: cfg.ConfigOpts) -> None:
    conf.register_opts(opts, group=GROUP)


def list_opts() -> dict:
    return {GROUP: opts}
