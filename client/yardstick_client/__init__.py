"""The Yardstick REST API in Python and on the command line (``yardstick --help``).

from yardstick_client import Client

client = Client("http://127.0.0.1:8000", token="...")
submission = client.submit("demo", "my-model", {12: 0.83, 13: 0.41})
print(submission["evaluation"]["tau_w"], client.card("demo")["resolution"])
"""

from .client import Client
from .decisions import decision_rows
from .errors import (
    ApiError,
    ConnectionFailed,
    EvaluationFailed,
    IncompatibleServer,
    ServerVersionWarning,
    WaitTimeout,
    YardstickError,
)
from .scores import score_rows
from .versions import API_VERSION, version_verdict

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
    "decision_rows",
    "score_rows",
    "version_verdict",
]
