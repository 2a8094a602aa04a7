"""gunicorn's settings for the web service (docker-compose.yml's ``web``, the Dockerfile).

The defaults are the ones measured on a 2-core host:
``WEB_CONCURRENCY`` processes of ``WEB_THREADS`` threads each. More than one thread gives gthread
workers, whose threads wait on the database and Redis while another runs Python; one thread gives
sync workers. The gthread worker is gunicorn's with one change (``config/gunicorn_worker.py``): a new
connection waits for its first request in the poller, not in one of the few threads. ``GUNICORN_CMD_ARGS`` and the command line override anything set here.
"""

import gc
import os

bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY") or 2)
threads = int(os.environ.get("WEB_THREADS") or 4)
worker_class = "config.gunicorn_worker.PollerThreadWorker" if threads > 1 else "sync"
accesslog = "-"
# Kept-alive connections let the voting page's script reuse one connection for next and vote. An
# annotator thinks for seconds between votes, sometimes a minute: a connection closed after gunicorn's
# default 5 s races the next request on it (the load benchmark's crowd saw RemoteProtocolError), so
# idle connections are kept longer than a proxy's usual 60 s idle timeout; gthread holds them in its
# poller, not in a thread.
keepalive = 75


def post_worker_init(worker):
    """Once the worker has loaded Django: move every object alive now (modules, models, URL patterns,
    REST framework's and numpy's objects: about 120,000) out of the garbage collector's reach.

    A full collection traverses every tracked object while holding the GIL, so it stops all the
    worker's threads: 59 to 61 ms on a 2-core host with this application loaded, and it came once
    in 1,500 judgements served by one process. Objects loaded at start live as long as the process;
    frozen, they are never traversed again, and a full collection then takes under 0.1 ms.
    Garbage is collected first, so that none of it is kept.
    """
    gc.collect()
    gc.freeze()
    worker.log.info("froze %d objects loaded at start out of the garbage collector", gc.get_freeze_count())
