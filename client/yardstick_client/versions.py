"""Which API version the client speaks, and what to say about a server of another version."""

from __future__ import annotations

from .errors import IncompatibleServer

API_VERSION = "0.3.0"  # the API version this client speaks: the server's settings.API_VERSION
API_VERSION_HEADER = "X-Yardstick-API-Version"


def _version_parts(version: str) -> tuple[int, int]:
    major, minor, *_ = (version.split(".") + ["0", "0"])[:3]
    return int(major), int(minor)


def version_verdict(server_version: str | None, client_version: str = API_VERSION) -> str | None:
    """What to say about a server of ``server_version`` to a client of ``client_version``.

    None when they match in major and minor version. Raises ``IncompatibleServer`` when the major
    versions differ; returns a warning's text when only the minor versions do. A server that states no
    version predates the header (API 0.1).
    """
    if server_version is None:
        return (
            f"the server is older than this client: it does not state its API version (API before 0.2, "
            f"or not a Yardstick server); this client speaks API {client_version}, and calls the server "
            "lacks will fail with HTTP 404"
        )
    try:
        server, client = _version_parts(server_version), _version_parts(client_version)
    except ValueError:
        raise IncompatibleServer(
            f"the server states an API version that is not one: {server_version!r}"
        ) from None
    if server == client:
        return None
    relation = "newer" if server > client else "older"
    if server[0] != client[0]:
        advice = (
            "upgrade the client (pip install the client/ folder of the server's release)"
            if relation == "newer"
            else f"use a client of API {server[0]}.x, or upgrade the server"
        )
        raise IncompatibleServer(
            f"the server is {relation} than this client: its API is {server_version}, this client speaks "
            f"{client_version}, and a new major version breaks clients; {advice}"
        )
    if relation == "newer":
        return (
            f"the server is newer than this client: its API is {server_version}, this client speaks "
            f"{client_version}; everything here works, but what the server added since is not in this "
            "client: upgrade it to use that"
        )
    return (
        f"the server is older than this client: its API is {server_version}, this client speaks "
        f"{client_version}; calls to what was added since will fail with HTTP 404"
    )
