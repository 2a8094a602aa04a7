"""The Yardstick REST API in Python and on the command line (``yardstick --help``).

from yardstick_client import Client

client = Client("http://127.0.0.1:8000", token="...")
submission = client.submit("demo", "my-model", {12: 0.83, 13: 0.41})
print(submission["evaluation"]["tau_w"], client.card("demo")["resolution"])
"""

from .client import API_VERSION, Client, score_rows, version_verdict
from .errors import (
    ApiError,
    ConnectionFailed,
    EvaluationFailed,
    IncompatibleServer,
    ServerVersionWarning,
    WaitTimeout,
    YardstickError,
)

__version__ = API_VERSION
__all__ = [
    "API_VERSION",
    "ApiError",
    "Client",
    "ConnectionFailed",
    "EvaluationFailed",
    "IncompatibleServer",
    "ServerVersionWarning",
    "WaitTimeout",
    "YardstickError",
    "score_rows",
    "version_verdict",
]
