"""gunicorn's gthread worker, except that a new connection waits for its first request in the poller.

gunicorn 24 and later hand a connection to a pool thread as soon as it is accepted, and the thread waits
there up to 5 s for the request's first bytes (``DEFAULT_WORKER_DATA_TIMEOUT`` in
``gunicorn/workers/gthread.py``) before giving it back to the poller. A connection opened ahead of its
request (a browser's preconnection, a client that connects and then thinks, a proxy's spare
connection, or a slow or hostile client) holds one of the worker's few threads for those seconds. Web
runs 2 processes of 4 threads (``config/gunicorn.conf.py``): eight such connections stop every request
for up to 5 s. With wrk's 500 annotators, who connect first and judge after thinking for 2 s, the
requests' p95 was 1.9 s with gunicorn 27's worker, and 87 ms with gunicorn 23's, which waited in the
poller.

``PollerThreadWorker`` puts every new connection where gunicorn 27 puts the ones that sent nothing for
5 s: on the poller, as pending, closed after ``keepalive`` seconds without a request. A thread takes the
connection once it is readable, so an idle connection costs a file descriptor and no thread. Everything
else is gunicorn's: the class reads its ``pending_conns``, ``poller``, ``nr_conns`` and
``on_pending_socket_readable``, which is why ``pyproject.toml`` holds gunicorn below 28, and
``tests/config/test_gunicorn_worker.py`` checks the behaviour against a real gunicorn (and that gunicorn's
own worker still needs this).
"""

from __future__ import annotations

import errno
import selectors
import time
from functools import partial

from gunicorn.workers.gthread import TConn, ThreadWorker


class PollerThreadWorker(ThreadWorker):
    """gthread, with accepted connections waiting in the poller until they are readable."""

    def accept(self, listener):
        try:
            client_sock, client_addr = listener.accept()
        except OSError as error:
            if error.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        conn = TConn(self.cfg, client_sock, client_addr, listener.getsockname())  # non-blocking
        conn.timeout = time.monotonic() + self.cfg.keepalive  # as gunicorn's deferred connections
        self.pending_conns.append(conn)
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self.on_pending_socket_readable, conn))
