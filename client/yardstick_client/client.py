"""``Client``: the Yardstick REST API in Python, for researchers and model owners.

Every call is one or a few HTTP requests to the API (``/api/docs/`` on a server documents them);
errors leave as ``ApiError`` with the API's message and status. Waits (a job, an evaluation, a card,
a running study) poll the API and draw a progress bar on stderr.
"""

from __future__ import annotations

import math
import os
import pathlib
import shutil
import sys
import tempfile
import time
import urllib.parse
import warnings
import zipfile
from collections.abc import Mapping, Sequence
from typing import IO, Any

import httpx

from .decisions import decision_rows
from .errors import (
    ApiError,
    ConnectionFailed,
    EvaluationFailed,
    ServerVersionWarning,
    WaitTimeout,
    YardstickError,
)
from .progress import ProgressBar
from .scores import CsvSource, read_csv, score_rows
from .versions import API_VERSION, API_VERSION_HEADER, version_verdict

DEFAULT_URL = "http://127.0.0.1:8000"
PAGE_SIZE = 1000  # the API's largest page
DEFAULT_TIMEOUT_SECONDS = 60.0  # one request
DEFAULT_WAIT_SECONDS = 600.0  # one wait (an evaluation, a card, a job)
MAX_CARD_POLL_SECONDS = 30.0  # a card's Retry-After is followed, but never slept longer than this


def _quote(slug: str) -> str:
    return urllib.parse.quote(str(slug), safe="")


class Client:
    """A connection to one Yardstick server, as one user (by API token) or anonymously.

    ``url`` and ``token`` default to the variables ``YARDSTICK_URL`` and ``YARDSTICK_TOKEN``.
    ``progress`` draws the waits' progress bars on ``progress_stream`` (stderr); None draws them when
    that stream is a terminal. ``transport`` is httpx's (for instance an ``httpx.MockTransport``).
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        progress: bool | None = None,
        progress_stream: IO[str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ):
        url = url or os.environ.get("YARDSTICK_URL") or DEFAULT_URL
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise YardstickError(
                f"the server URL must be http(s)://host[:port], such as {DEFAULT_URL}, not {url!r}"
            )
        self.url = url.rstrip("/")
        self.token = token if token is not None else os.environ.get("YARDSTICK_TOKEN") or None
        self.progress_stream = progress_stream
        if progress is None:
            stream = progress_stream if progress_stream is not None else sys.stderr
            progress = bool(getattr(stream, "isatty", lambda: False)())
        self.show_progress = progress
        self.server_api_version: str | None = None
        self._version_checked = False
        self._http = httpx.Client(
            base_url=self.url,
            timeout=timeout,
            transport=transport,
            headers={"Accept": "application/json", "User-Agent": f"yardstick-client/{API_VERSION}"},
            event_hooks={"response": [self._check_version]},
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    # --- HTTP ------------------------------------------------------------------------------------

    def _check_version(self, response: httpx.Response) -> None:
        """Compares the server's API version with this client's, on the first answer of the server."""
        if self._version_checked or not response.request.url.path.startswith("/api/"):
            return
        stated = response.headers.get(API_VERSION_HEADER)
        if stated is None and response.is_server_error:
            return  # a proxy's or gateway's error page says nothing of the server behind it
        verdict = version_verdict(stated)  # raises IncompatibleServer
        self.server_api_version = stated
        self._version_checked = True
        if verdict:
            warnings.warn(verdict, ServerVersionWarning, stacklevel=2)

    def _bar(self, label: str) -> ProgressBar:
        return ProgressBar(label, stream=self.progress_stream, enabled=self.show_progress)

    def request(self, method: str, path: str, *, authenticated: bool = True, **options) -> httpx.Response:
        """One request to the API; returns the response, or raises ``ApiError`` / ``ConnectionFailed``."""
        headers = dict(options.pop("headers", None) or {})
        if authenticated and self.token:
            headers["Authorization"] = f"Token {self.token}"
        try:
            response = self._http.request(method, path, headers=headers, **options)
        except httpx.TransportError as error:
            raise ConnectionFailed(
                f"cannot reach the Yardstick server at {self.url} ({error.__class__.__name__}: {error}); "
                "is it running, and is the URL right?"
            ) from None
        if response.is_error:
            raise self._api_error(response)
        return response

    def _json(self, method: str, path: str, **options) -> Any:
        response = self.request(method, path, **options)
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise YardstickError(
                f"{method} {response.request.url} answered HTTP {response.status_code} but not with JSON; "
                "is the URL a Yardstick server's?"
            ) from None

    @staticmethod
    def _api_error(response: httpx.Response) -> ApiError:
        detail, errors = "", []
        try:
            body = response.json()
        except ValueError:
            text = response.text.strip()
            detail = text.splitlines()[0][:300] if text else response.reason_phrase
        else:
            if isinstance(body, dict):
                detail = str(body.get("detail") or "") or str(body)[:300]
                raw = body.get("errors") or []
                errors = [str(error) for error in raw] if isinstance(raw, list) else [str(raw)]
            else:
                detail = str(body)[:300]
        if response.status_code == 401 and not response.request.headers.get("Authorization"):
            detail += " (this client has no token: pass token= or set YARDSTICK_TOKEN)"
        return ApiError(
            status=response.status_code,
            detail=detail,
            errors=errors,
            method=response.request.method,
            url=str(response.request.url),
        )

    def _all_pages(self, path: str, params: Mapping | None = None) -> list[dict]:
        """Every row of a paginated list, following ``next``."""
        rows: list[dict] = []
        page = self._json("GET", path, params={"limit": PAGE_SIZE, **(params or {})})
        rows += page["results"]
        while page.get("next"):
            page = self._json("GET", page["next"])
            rows += page["results"]
        return rows

    # --- account ---------------------------------------------------------------------------------

    def log_in(self, username: str, password: str) -> str:
        """Trades a username and password for the user's API token, which this client then sends."""
        body = self._json(
            "POST", "/api/auth/token/", json={"username": username, "password": password}, authenticated=False
        )
        self.token = body["token"]
        return self.token

    def api_version(self) -> str | None:
        """The server's API version (None for a server before 0.2), checked against this client's."""
        if not self._version_checked:
            try:
                # Every /api/ answer carries the version: /api/ itself, a small JSON 404, is the cheapest.
                self._http.request("GET", "/api/")
            except httpx.TransportError as error:
                raise ConnectionFailed(f"cannot reach the Yardstick server at {self.url} ({error})") from None
        return self.server_api_version

    # --- researchers: studies --------------------------------------------------------------------

    def studies(self) -> list[dict]:
        """Every study (staff)."""
        return self._all_pages("/api/studies/")

    def study(self, slug: str) -> dict:
        """One study's settings and state (staff)."""
        return self._json("GET", f"/api/studies/{_quote(slug)}/")

    def create_study(
        self,
        name: str,
        slug: str,
        *,
        tokens: CsvSource | None = None,
        generate_items: bool = True,
        max_per_area: int | None = None,
        **settings: Any,
    ) -> dict:
        """Creates a draft study; with ``tokens`` (a tokens CSV: token, area[, rare]) imports them and,
        unless ``generate_items`` is False, makes its items (all pairs within each area, or a sample of
        ``max_per_area``), waiting for the job when the server runs one. ``settings`` are the study's
        fields (question, ballot_count, keep_fraction, appearances, ...). Returns the study."""
        self._json("POST", "/api/studies/", json={"name": name, "slug": slug, **settings})
        if tokens is not None:
            self.upload_tokens(slug, tokens)
            if generate_items:
                self.generate_items(slug, max_per_area=max_per_area)
        return self.study(slug)

    def update_study(self, slug: str, **changes: Any) -> dict:
        """Changes some fields of a study (its plan only while it is a draft)."""
        return self._json("PATCH", f"/api/studies/{_quote(slug)}/", json=changes)

    def upload_tokens(self, slug: str, tokens: CsvSource, *, replace: bool = False) -> dict:
        """Adds a tokens CSV (token, area[, rare]) to a draft study's pool, or replaces the pool with it.
        Returns the import report; a bad file raises ``ApiError`` with its problems by line."""
        return self._json(
            "POST",
            f"/api/studies/{_quote(slug)}/tokens/",
            params={"mode": "replace" if replace else "add"},
            content=read_csv(tokens),
            headers={"Content-Type": "text/csv"},
        )

    def upload_items(self, slug: str, items: CsvSource) -> dict:
        """Replaces a draft study's items by explicit pairs from CSV (token_a, token_b)."""
        return self._json(
            "POST",
            f"/api/studies/{_quote(slug)}/items/upload/",
            content=read_csv(items),
            headers={"Content-Type": "text/csv"},
        )

    def generate_items(
        self,
        slug: str,
        *,
        max_per_area: int | None = None,
        wait: bool = True,
        timeout: float = DEFAULT_WAIT_SECONDS,
    ) -> dict:
        """Replaces a draft study's items by all pairs of tokens within each area. The server makes
        few items at once (the import report) and many in a background job (the job; with ``wait``,
        followed with a progress bar until it is done, then its final state)."""
        body = {} if max_per_area is None else {"max_per_area": max_per_area}
        response = self.request("POST", f"/api/studies/{_quote(slug)}/items/generate/", json=body)
        answer = response.json()
        if response.status_code != 202 or not wait:
            return answer
        return self.wait_for_job(answer, timeout=timeout)

    def wait_for_job(
        self, job: Mapping, *, timeout: float = DEFAULT_WAIT_SECONDS, poll_seconds: float = 1.0
    ) -> dict:
        """Follows a study's job (``{"url", "status", "done", "total", ...}``) until it is done."""
        deadline = time.monotonic() + timeout
        current = dict(job)
        with self._bar(f"{current.get('kind', 'job')}") as bar:
            while True:
                bar.update(current.get("done"), current.get("total"), current.get("status", ""))
                if current["status"] == "done":
                    return current
                if current["status"] == "failed":
                    raise YardstickError(
                        f"the job failed on the server: {current.get('error') or 'no reason given'}"
                    )
                if time.monotonic() >= deadline:
                    raise WaitTimeout(
                        f"the job is still {current['status']} after {timeout:g} s; it goes on on the server: "
                        f"GET {self.url}{current['url']}"
                    )
                time.sleep(poll_seconds)
                current = self._json("GET", current["url"])

    def plan(self, slug: str) -> dict:
        """The ballot plan for the study's items: sizes, comparisons, cost, the §2.7 warnings."""
        return self._json("GET", f"/api/studies/{_quote(slug)}/plan/")

    def start(self, slug: str) -> dict:
        """Starts a draft study: freezes the plan and opens ballot 1. Returns the study."""
        return self._json("POST", f"/api/studies/{_quote(slug)}/start/")

    def progress(self, slug: str) -> list[dict]:
        """Every ballot opened so far: number, status, items, comparisons, votes, percent."""
        return self._json("GET", f"/api/studies/{_quote(slug)}/progress/")

    def watch(self, slug: str, *, poll_seconds: float = 10.0, timeout: float | None = None) -> list[dict]:
        """Follows a running study with a progress bar (the open ballot's votes) until it finishes;
        returns its ballots' progress then. Raises ``WaitTimeout`` after ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        ballot_count = self.study(slug)["ballot_count"]
        with self._bar(f"study {slug}") as bar:
            while True:
                ballots = self.progress(slug)
                study = self.study(slug)
                current = ballots[-1] if ballots else None
                if current is not None:
                    bar.update(
                        current["votes"],
                        current["comparisons"],
                        f"ballot {current['number']} of {ballot_count} ({current['status']}): "
                        f"{current['votes']:,} of {current['comparisons']:,} votes",
                    )
                if study["status"] == "finished":
                    return ballots
                if study["status"] == "draft":
                    raise YardstickError(f"study {slug!r} is a draft: start it first")
                if deadline is not None and time.monotonic() >= deadline:
                    raise WaitTimeout(f"study {slug!r} is still {study['status']} after {timeout:g} s")
                time.sleep(poll_seconds)

    def close_ballot(self, slug: str) -> dict:
        """Closes the open ballot now, with the votes it has (the next one opens in the background)."""
        return self._json("POST", f"/api/studies/{_quote(slug)}/close-ballot/")

    def results(self, slug: str) -> list[dict]:
        """The final ranking of a finished study (staff; its researchers, when it keeps a hidden part)."""
        return self._json("GET", f"/api/studies/{_quote(slug)}/results/")

    def live(self, slug: str) -> dict:
        """A running study's live view: votes over time and the rate, each ballot's progress and expected
        end, the study's expected end, annotators, check accuracy, the top items of the last close."""
        return self._json("GET", f"/api/studies/{_quote(slug)}/live/")

    def download_dataset(
        self,
        slug: str,
        folder: str | os.PathLike,
        *,
        license: str | None = None,
        language: str | None = None,
        timeout: float = DEFAULT_WAIT_SECONDS,
    ) -> pathlib.Path:
        """Writes a finished study's Hugging Face dataset into ``folder`` (new or empty): Parquet tables
        of the items, votes and ballots and the dataset card ``README.md``, which
        ``datasets.load_dataset(folder)`` loads. ``license`` and ``language`` are the card's (the
        server's defaults otherwise). A card being computed first is waited for. Returns the folder."""
        target = pathlib.Path(folder)
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise YardstickError(f"{target} exists and is not an empty folder: give a new or empty one")
        params = {name: value for name, value in (("license", license), ("language", language)) if value}
        path = f"/api/studies/{_quote(slug)}/hub-dataset/"
        deadline = time.monotonic() + timeout
        with tempfile.TemporaryFile() as archive:
            with self._bar(f"dataset of {slug}") as bar:
                while True:
                    response = self.request("GET", path, params=params)
                    if response.status_code != 202:
                        archive.write(response.content)
                        break
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise WaitTimeout(response.json().get("detail", "the card is being computed"))
                    bar.update(note="computing the instrument card")
                    retry_after = _retry_after(response.headers.get("Retry-After"), None)
                    time.sleep(min(retry_after, left, MAX_CARD_POLL_SECONDS))
            target.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=target.parent) as unpacked:
                try:
                    with zipfile.ZipFile(archive) as dataset:
                        # extractall keeps every member inside the folder (it drops "..", and absolute roots)
                        dataset.extractall(unpacked)
                except zipfile.BadZipFile:
                    raise YardstickError(f"GET {path} did not answer a zip archive") from None
                tops = list(pathlib.Path(unpacked).iterdir())
                root = tops[0] if len(tops) == 1 and tops[0].is_dir() else pathlib.Path(unpacked)
                target.mkdir(exist_ok=True)
                for entry in root.iterdir():  # the archive's one folder becomes ``folder``
                    shutil.move(entry, target / entry.name)
        return target

    # --- model owners ----------------------------------------------------------------------------

    def pairs(self, slug: str) -> list[dict]:
        """Every item of a finished study to score: ``{"item", "token_a", "token_b", "area"}``."""
        return self._all_pages(f"/api/studies/{_quote(slug)}/pairs/")

    def submit(
        self,
        slug: str,
        model_name: str,
        scores: Any = None,
        *,
        csv: CsvSource | None = None,
        pairs: Sequence[Mapping] | None = None,
        description: str = "",
        wait: bool = True,
        timeout: float = DEFAULT_WAIT_SECONDS,
    ) -> dict:
        """Submits a model's scores of a finished study's items, higher = more related.

        ``scores`` is a dict ``{item id: score}`` or ``{(token_a, token_b): score}``, or a list or numpy
        array with one score per pair in the order of ``pairs`` (fetched when not given); or ``csv`` a
        CSV file (path, bytes or open file) with the header ``item,score`` or ``token_a,token_b,score``.
        With ``wait`` returns the submission once evaluated (with ``evaluation``), else as stored.
        """
        path = f"/api/studies/{_quote(slug)}/submissions/"
        if (scores is None) == (csv is None):
            raise TypeError("give the scores either as scores= (a dict, list or array) or as csv= (a file)")
        if csv is not None:
            created = self._json(
                "POST",
                path,
                data={"model_name": model_name, "description": description},
                files={"file": (f"{model_name}.csv", read_csv(csv), "text/csv")},
            )
        else:
            if not isinstance(scores, Mapping) and pairs is None:
                pairs = self.pairs(slug)
            rows = score_rows(scores, pairs)
            created = self._json(
                "POST", path, json={"model_name": model_name, "description": description, "scores": rows}
            )
        if not wait:
            return created
        return self.wait_for_evaluation(created["id"], timeout=timeout)

    def submission(self, submission_id: int) -> dict:
        """One of your submissions: status, progress, coverage and, once done, its evaluation."""
        return self._json("GET", f"/api/submissions/{int(submission_id)}/")

    def submissions(self) -> list[dict]:
        """Your submissions, newest first."""
        return self._all_pages("/api/submissions/")

    def wait_for_evaluation(
        self, submission_id: int, *, timeout: float = DEFAULT_WAIT_SECONDS, poll_seconds: float = 1.0
    ) -> dict:
        """Follows a submission with a progress bar until it is evaluated; returns it with its
        ``evaluation``. Raises ``EvaluationFailed`` with the server's reason, or ``WaitTimeout``."""
        return self._wait_until_evaluated(
            lambda: self.submission(submission_id),
            f"submission {submission_id}",
            f"client.submission({submission_id})",
            timeout=timeout,
            poll_seconds=poll_seconds,
        )

    def _wait_until_evaluated(
        self, read, what: str, later: str, *, timeout: float, poll_seconds: float
    ) -> dict:
        """Polls ``read()`` (a submission or a judge) with a progress bar until its status is done."""
        deadline = time.monotonic() + timeout
        with self._bar(f"evaluation of {what}") as bar:
            while True:
                current = read()
                bar.update(current.get("progress") or 0, 100, current["status"])
                if current["status"] == "done":
                    return current
                if current["status"] == "failed":
                    raise EvaluationFailed(
                        f"the server could not evaluate {what}: {current.get('error') or 'no reason given'}"
                    )
                if time.monotonic() >= deadline:
                    raise WaitTimeout(
                        f"the evaluation of {what} is still {current['status']} after {timeout:g} s; "
                        f"it goes on on the server: {later} later"
                    )
                time.sleep(poll_seconds)

    def evaluation(self, submission_id: int, *, n0: float | None = None, k: int | None = None) -> dict:
        """The evaluation of one of your submissions: at the study's defaults, or at another weight
        offset ``n0`` and retrieval cut-off ``k``."""
        if n0 is None and k is None:
            submission = self.submission(submission_id)
            if submission["evaluation"] is None:
                raise YardstickError(
                    f"submission {submission_id} is {submission['status']}: its evaluation is not ready "
                    f"(client.wait_for_evaluation({submission_id}) waits for it)"
                )
            return submission["evaluation"]
        params = {name: value for name, value in (("n0", n0), ("k", k)) if value is not None}
        return self._json("GET", f"/api/submissions/{int(submission_id)}/evaluation/", params=params)

    def leaderboard(self, slug: str, *, metric: str = "tau_w", n0: float | None = None) -> dict:
        """The leaderboard of a finished study by ``metric`` (rho_w, tau_w, rho, tau), at ``n0``."""
        params = {"metric": metric, **({} if n0 is None else {"n0": n0})}
        return self._json(
            "GET", f"/api/studies/{_quote(slug)}/leaderboard/", params=params, authenticated=False
        )

    # --- judges: an automatic judge's decisions on the crowd's comparisons --------------------------

    def judge_pairs(self, slug: str) -> list[dict]:
        """Every pair of items the crowd compared in a finished study, for a judge to decide:
        ``{"pair", "left_item", "left_token_a", "left_token_b", "right_item", "right_token_a",
        "right_token_b"}``."""
        return self._all_pages(f"/api/studies/{_quote(slug)}/judge-pairs/")

    def submit_judge(
        self,
        slug: str,
        judge_name: str,
        decisions: Any = None,
        *,
        file: CsvSource | None = None,
        pairs: Sequence[Mapping] | None = None,
        description: str = "",
        wait: bool = True,
        timeout: float = DEFAULT_WAIT_SECONDS,
    ) -> dict:
        """Submits a judge's decisions on a finished study's pairs: which of the two items is more
        related, ``"left"``, ``"right"`` or ``"tie"`` (where the study allows ties).

        ``decisions`` is a dict ``{pair number: decision}``, or a list with one decision (None: undecided)
        per pair in the order of ``pairs`` (fetched when not given); or ``file`` a CSV (header
        ``pair,decision``) or JSONL (one ``{"pair": …, "decision": …}`` per line) file as a path, bytes
        or open file. With ``wait`` returns the judge once evaluated (with ``evaluation``), else as stored.
        """
        path = f"/api/studies/{_quote(slug)}/judges/"
        if (decisions is None) == (file is None):
            raise TypeError(
                "give the decisions either as decisions= (a dict or list) or as file= (CSV or JSONL)"
            )
        if file is not None:
            created = self._json(
                "POST",
                path,
                data={"judge_name": judge_name, "description": description},
                files={"file": (f"{judge_name}.txt", read_csv(file), "text/plain")},
            )
        else:
            if not isinstance(decisions, Mapping) and pairs is None:
                pairs = self.judge_pairs(slug)
            rows = decision_rows(decisions, pairs)
            created = self._json(
                "POST", path, json={"judge_name": judge_name, "description": description, "decisions": rows}
            )
        if not wait:
            return created
        return self.wait_for_judge(created["id"], timeout=timeout)

    def judge(self, judge_id: int) -> dict:
        """One of your judges: status, progress, coverage and, once done, its evaluation."""
        return self._json("GET", f"/api/judges/{int(judge_id)}/")

    def judges(self) -> list[dict]:
        """Your judges, newest first."""
        return self._all_pages("/api/judges/")

    def wait_for_judge(
        self, judge_id: int, *, timeout: float = DEFAULT_WAIT_SECONDS, poll_seconds: float = 1.0
    ) -> dict:
        """Follows a judge with a progress bar until it is evaluated; returns it with its ``evaluation``.
        Raises ``EvaluationFailed`` with the server's reason, or ``WaitTimeout``."""
        return self._wait_until_evaluated(
            lambda: self.judge(judge_id),
            f"judge {judge_id}",
            f"client.judge({judge_id})",
            timeout=timeout,
            poll_seconds=poll_seconds,
        )

    def judge_evaluation(self, judge_id: int, *, n0: float | None = None, k: int | None = None) -> dict:
        """The evaluation of one of your judges: agreement with the crowd, its ranking, where it
        disagrees and the verdict; at the study's defaults, or at another ``n0`` and ``k``."""
        params = {name: value for name, value in (("n0", n0), ("k", k)) if value is not None}
        return self._json("GET", f"/api/judges/{int(judge_id)}/evaluation/", params=params)

    def judge_leaderboard(self, slug: str, *, metric: str = "tau_w", n0: float | None = None) -> dict:
        """The judges' leaderboard of a finished study by their rankings' ``metric``, at ``n0``."""
        params = {"metric": metric, **({} if n0 is None else {"n0": n0})}
        return self._json(
            "GET", f"/api/studies/{_quote(slug)}/judges/leaderboard/", params=params, authenticated=False
        )

    def card(self, slug: str, *, wait: bool = True, timeout: float = DEFAULT_WAIT_SECONDS) -> dict:
        """The study's instrument card (its .json download). A card being computed is waited for with a
        progress bar, at the server's Retry-After; without ``wait`` that raises ``WaitTimeout`` at once."""
        deadline = time.monotonic() + timeout
        path = f"/api/studies/{_quote(slug)}/card/"
        with self._bar(f"instrument card of {slug}") as bar:
            while True:
                response = self.request("GET", path, authenticated=False)
                if response.status_code != 202:
                    return response.json()
                body = response.json()
                left = deadline - time.monotonic()
                if not wait or left <= 0:
                    raise WaitTimeout(body.get("detail", "the card is being computed"))
                bar.update(note="computing")
                retry_after = _retry_after(response.headers.get("Retry-After"), body.get("retry_after"))
                time.sleep(min(retry_after, left, MAX_CARD_POLL_SECONDS))

    def card_markdown(self, slug: str) -> str:
        """The instrument card as Markdown (the card page's download); ``card()`` first waits for a card
        being computed, which this page would compute in the request."""
        return self.request("GET", f"/models/studies/{_quote(slug)}/card.md", authenticated=False).text


def _retry_after(header: str | None, field: Any) -> float:
    for value in (header, field):
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return max(seconds, 0.5)
    return 3.0
