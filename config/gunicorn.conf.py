"""gunicorn's settings for the web service (docker-compose.yml's ``web``, the Dockerfile).

The defaults are the ones measured on a 2-core host:
``WEB_CONCURRENCY`` processes of ``WEB_THREADS`` threads each. More than one thread gives gthread
workers, whose threads wait on the database and Redis while another runs Python; one thread gives
sync workers. gunicorn runs behind nginx (``config/nginx/yardstick.conf.template``), which hands it only
whole requests. ``GUNICORN_CMD_ARGS`` and the command line override anything set here.
"""

import gc
import os

bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY") or 2)
threads = int(os.environ.get("WEB_THREADS") or 4)
worker_class = "gthread" if threads > 1 else "sync"
accesslog = "-"
# nginx keeps its connections to gunicorn open between requests for up to 60 s: gunicorn keeps them
# longer, so that it never closes one as nginx sends a request on it.
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
