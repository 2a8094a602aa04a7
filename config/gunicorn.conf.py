"""gunicorn's settings for the web service (docker-compose.yml's ``web``, the Dockerfile).

The defaults are the ones measured on a 2-core host (BENCHMARKS.md, "The server as deployed"):
``WEB_CONCURRENCY`` processes of ``WEB_THREADS`` threads each. More than one thread gives gthread
workers, whose threads wait on the database and Redis while another runs Python; one thread gives
sync workers. ``GUNICORN_CMD_ARGS`` and the command line override anything set here.
"""

import os

bind = f"0.0.0.0:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY") or 2)
threads = int(os.environ.get("WEB_THREADS") or 4)
worker_class = "gthread" if threads > 1 else "sync"
accesslog = "-"
# Kept-alive connections let the voting page's script reuse one connection for next and vote.
keepalive = 5
