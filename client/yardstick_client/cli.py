"""The ``yardstick`` command: the client's calls from a shell.

The server and the token come from ``--url`` and ``--token``, else from ``YARDSTICK_URL`` and
``YARDSTICK_TOKEN``. Results go to stdout (text, or JSON with ``--json``), progress bars and errors to
stderr; the exit status is 0 on success, 1 when the server or the input refused, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import csv
import getpass
import io
import json
import sys
import warnings
from collections.abc import Sequence
from typing import TextIO

from .client import DEFAULT_URL, Client
from .errors import ApiError, ServerVersionWarning, YardstickError
from .versions import API_VERSION

COEFFICIENTS = {"rho_w": "ρ_w", "tau_w": "τ_w", "rho": "ρ", "tau": "τ"}


def _setting(text: str) -> tuple[str, object]:
    """``name=value``, the value read as JSON when it is JSON (numbers, true, null), else as text."""
    name, separator, value = text.partition("=")
    if not separator or not name:
        raise argparse.ArgumentTypeError(f"a setting is name=value (ballot_count=3), not {text!r}")
    try:
        return name, json.loads(value)
    except ValueError:
        return name, value


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(
        prog="yardstick",
        description="The Yardstick REST API from a shell: studies, submissions, leaderboards, instrument cards.",
    )
    root.add_argument("--url", help=f"the server's root URL (default: $YARDSTICK_URL, else {DEFAULT_URL})")
    root.add_argument(
        "--token", help="your API token (default: $YARDSTICK_TOKEN); `yardstick login` prints it"
    )
    root.add_argument("--json", action="store_true", help="print the API's JSON instead of text")
    root.add_argument("--quiet", action="store_true", help="no progress bars")
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")

    login = commands.add_parser("login", help="print your API token, from your username and password")
    login.add_argument("username")
    login.add_argument(
        "--password-stdin", action="store_true", help="read the password from stdin instead of asking for it"
    )
    commands.add_parser("version", help="this client's API version and the server's")

    study = commands.add_parser("study", help="researchers: create, plan, start and follow studies (staff)")
    actions = study.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", help="every study")
    for name, text in (
        ("show", "a study's settings and state"),
        ("plan", "the ballot plan for its items"),
        ("start", "start a draft study: freeze the plan, open ballot 1"),
        ("close-ballot", "close the open ballot now, with the votes it has"),
        ("results", "the final ranking of a finished study"),
        ("live", "a running study's live view: rate, ballots, expected end, annotators, checks"),
    ):
        actions.add_parser(name, help=text).add_argument("slug")
    create = actions.add_parser("create", help="create a draft study from a tokens CSV, with its items")
    create.add_argument("slug", help="the study's slug, as in its link /s/SLUG/")
    create.add_argument("--name", required=True, help="the study's name")
    create.add_argument("--tokens", required=True, metavar="CSV", help="tokens file: token,area[,rare]")
    create.add_argument("--max-per-area", type=int, help="a random sample of this many items per area")
    create.add_argument(
        "--set",
        dest="settings",
        type=_setting,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a study setting, repeatable: --set ballot_count=3 --set question='Which pair is closer?'",
    )
    dataset = actions.add_parser(
        "dataset", help="a finished study as a Hugging Face dataset (Parquet and its card) in FOLDER"
    )
    dataset.add_argument("slug")
    dataset.add_argument("folder", help="a new or empty folder; datasets.load_dataset(FOLDER) loads it")
    dataset.add_argument("--license", help="the card's license, e.g. cc-by-4.0 (the server's default)")
    dataset.add_argument("--language", help="the card's language code, e.g. en (the server's default)")
    progress = actions.add_parser("progress", help="each ballot's votes; --watch follows it to the end")
    progress.add_argument("slug")
    progress.add_argument("--watch", action="store_true", help="follow with a progress bar until it finishes")
    progress.add_argument("--poll-seconds", type=float, default=10.0, help="seconds between polls (--watch)")

    pairs = commands.add_parser("pairs", help="model owners: a finished study's items to score, as CSV")
    pairs.add_argument("slug")
    submit = commands.add_parser(
        "submit", help="model owners: submit a model's scores and show its evaluation"
    )
    submit.add_argument("slug")
    submit.add_argument("model_name", help="the name on the leaderboard, unique among your models")
    submit.add_argument("scores", metavar="CSV", help="item,score or token_a,token_b,score")
    submit.add_argument("--description", default="", help="stored with the submission")
    submit.add_argument("--no-wait", action="store_true", help="do not wait for the evaluation")
    submit.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the evaluation")
    evaluation = commands.add_parser(
        "evaluation", help="model owners: the evaluation of one of your submissions"
    )
    evaluation.add_argument("submission", type=int)
    evaluation.add_argument("--n0", type=float, help="another weight offset n0 (default: the study's, 2)")
    evaluation.add_argument("--k", type=int, help="another K of the retrieval measures")

    judge = commands.add_parser(
        "judge", help="model owners: an automatic judge's decisions on the crowd's pairs"
    )
    judge_actions = judge.add_subparsers(dest="action", required=True, metavar="ACTION")
    judge_actions.add_parser("pairs", help="a finished study's pairs to decide, as CSV").add_argument("slug")
    judge_submit = judge_actions.add_parser(
        "submit", help="submit a judge's decisions and show its evaluation"
    )
    judge_submit.add_argument("slug")
    judge_submit.add_argument(
        "judge_name", help="the name on the judges' leaderboard, unique among your entries"
    )
    judge_submit.add_argument(
        "decisions", metavar="FILE", help="CSV pair,decision or JSONL {pair, decision}; left, right or tie"
    )
    judge_submit.add_argument("--description", default="", help="stored with the judge")
    judge_submit.add_argument("--no-wait", action="store_true", help="do not wait for the evaluation")
    judge_submit.add_argument(
        "--timeout", type=float, default=600.0, help="seconds to wait for the evaluation"
    )
    judge_evaluation = judge_actions.add_parser("evaluation", help="the evaluation of one of your judges")
    judge_evaluation.add_argument("judge", type=int)
    judge_evaluation.add_argument(
        "--n0", type=float, help="another weight offset n0 (default: the study's, 2)"
    )
    judge_evaluation.add_argument("--k", type=int, help="another K of the retrieval measures")
    judge_board = judge_actions.add_parser("leaderboard", help="a finished study's judges' leaderboard")
    judge_board.add_argument("slug")
    judge_board.add_argument("--metric", default="tau_w", choices=sorted(COEFFICIENTS))
    judge_board.add_argument("--n0", type=float, help="the weight offset (0, 1, 2, 5 or 10; default 2)")

    leaderboard = commands.add_parser("leaderboard", help="a finished study's leaderboard")
    leaderboard.add_argument("slug")
    leaderboard.add_argument("--metric", default="tau_w", choices=sorted(COEFFICIENTS))
    leaderboard.add_argument("--n0", type=float, help="the weight offset (0, 1, 2, 5 or 10; default 2)")
    card = commands.add_parser("card", help="a study's instrument card (Markdown; --json for its data)")
    card.add_argument("slug")
    card.add_argument("--timeout", type=float, default=600.0, help="seconds to wait while it is computed")
    return root


# --- text -------------------------------------------------------------------------------------------


def _figure(value, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _interval_text(interval) -> str:
    return f"[{_figure(interval[0])}, {_figure(interval[1])}]" if interval else "–"


def _coefficient_lines(evaluation: dict) -> list[str]:
    """ρ_w, τ_w, ρ and τ of an evaluation with their intervals, chance levels and p-values."""
    lines = [f"{'':5} {'value':>7}  {'95% interval':<17} {'chance':<8} {'p-value':>7}"]
    for key, label in COEFFICIENTS.items():
        coefficient = evaluation.get(key) or {}
        lines.append(
            f"{label:<5} {_figure(coefficient.get('value')):>7}  {_interval_text(coefficient.get('interval')):<17} "
            f"{coefficient.get('chance') or '–':<8} {_figure(coefficient.get('p_value'), 4):>7}"
        )
    return lines


def evaluation_text(submission: dict) -> str:
    """A submission's evaluation: the coefficients with their intervals, chance levels and p-values."""
    evaluation = submission["evaluation"]
    return "\n".join(
        [
            f"Submission {submission['id']}, {submission['model_name']!r} on {submission['study']!r}: "
            f"{evaluation['covered']} of {evaluation['items']} items; n0 = {evaluation['weight_offset']:g}",
            *_coefficient_lines(evaluation),
        ]
    )


JUDGE_AGREEMENT = {
    "majority": "accuracy against the crowd's majority",
    "single": "accuracy against single annotators",
    "kappa": "Cohen's κ against the crowd",
}


def judge_text(judge: dict) -> str:
    """A judge's evaluation: the verdict, its agreement with the crowd beside the crowd's own, its side,
    and its ranking's coefficients."""
    evaluation = judge["evaluation"]
    lines = [
        f"Judge {judge['id']}, {judge['judge_name']!r} on {judge['study']!r}: "
        f"{evaluation['decided']} of {evaluation['pairs']} pairs decided",
        evaluation["verdict"]["sentence"],
        f"{'':40} {'judge':>7}  {'95% interval':<17} {'crowd':>7}  {'95% interval':<17}",
    ]
    for key, label in JUDGE_AGREEMENT.items():
        entry = evaluation["agreement"][key]
        crowd = entry.get("crowd") or {}
        lines.append(
            f"{label:<40} {_figure(entry.get('value')):>7}  {_interval_text(entry.get('interval')):<17} "
            f"{_figure(crowd.get('value')):>7}  {_interval_text(crowd.get('interval')):<17}"
        )
    lines.append(evaluation["agreement"]["side"]["sentence"])
    lines.append(f"Its ranking through the study's score model ({evaluation['score_model']}):")
    return "\n".join(lines + _coefficient_lines(evaluation["ranking"]))


def leaderboard_text(board: dict) -> str:
    """A models' or a judges' leaderboard, one row per entry."""
    metric = board["metric"]
    lines = [f"Leaderboard by {COEFFICIENTS.get(metric, metric)}, n0 = {board['weight_offset']:g}:"]
    lines.append(f"{'rank':>4}  {'value':>7}  {'95% interval':<17} name (owner)")
    for row in board["rows"]:
        lines.append(
            f"{row['rank'] if row['rank'] is not None else '–':>4}  {_figure(row['value']):>7}  "
            f"{_interval_text(row.get('interval')):<17} {row.get('model_name') or row.get('judge_name')} "
            f"({row['owner']})"
        )
    if not board["rows"]:
        lines.append("  (none yet)")
    return "\n".join(lines)


def progress_text(ballots: list[dict]) -> str:
    lines = [f"{'ballot':>6}  {'status':<8} {'items':>6} {'votes':>14} {'done':>5}"]
    for ballot in ballots:
        lines.append(
            f"{ballot['number']:>6}  {ballot['status']:<8} {ballot['items']:>6,} "
            f"{ballot['votes']:>6,} / {ballot['comparisons']:<6,} {ballot['percent']:>4}%"
        )
    if not ballots:
        lines.append("  (no ballot yet: the study is a draft)")
    return "\n".join(lines)


def plan_text(plan: dict) -> str:
    lines = [
        f"{plan['item_count']:,} items, {plan['ballot_count']} ballots, keep {plan['keep_fraction']:g}, "
        f"{plan['appearances']} appearances per item per ballot",
        "ballot sizes: " + ", ".join(f"{size:,}" for size in plan["sizes"]),
        "comparisons:  "
        + ", ".join(f"{count:,}" for count in plan["comparisons"])
        + f" (total {plan['total_comparisons']:,})",
    ]
    if plan.get("cost_seconds") is not None:
        hours = plan["cost_seconds"] / 3600
        lines.append(
            f"voting time: {hours:,.1f} person-hours"
            if hours >= 1
            else f"voting time: {hours * 60:.1f} person-minutes"
        )
    lines += [f"warning: {warning}" for warning in plan.get("warnings", [])]
    return "\n".join(lines)


def _csv_text(header: list[str], rows) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


# --- the commands -------------------------------------------------------------------------------------


def live_text(live: dict) -> str:
    """The live view in a few lines: the rate and expected end, each ballot's votes, the annotators."""
    rate = live["rate"]["votes_per_minute"]
    lines = [
        f"{live['study']}: {live['status']}, {live['votes']} votes, "
        + (f"{rate:.1f} votes/min" if rate is not None else "no recent votes")
        + (f", expected end {live['expected_end']}" if live["expected_end"] else ""),
    ]
    for ballot in live["ballots"]:
        lines.append(
            f"  ballot {ballot['number']} {ballot['status']:<7} {ballot['votes']}/{ballot['comparisons']} "
            f"({ballot['percent']}%)" + (f", ends {ballot['expected_end']}" if ballot["expected_end"] else "")
        )
    people = live["annotators"]
    lines.append(
        f"annotators: {people['total']} in all, {people['active']} active, {people['finished']} finished, "
        f"{people['flagged'] if people['flagged'] is not None else '?'} flagged, {people['excluded']} excluded"
    )
    return "\n".join(lines)


def run(arguments: argparse.Namespace, client: Client, out: TextIO) -> None:
    def emit(data, text: str | None = None) -> None:
        if arguments.json or text is None:
            out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        else:
            out.write(text.rstrip("\n") + "\n")

    command = arguments.command
    if command == "login":
        if arguments.password_stdin:
            password = sys.stdin.readline().rstrip("\n")
        else:
            password = getpass.getpass(f"password for {arguments.username}: ")
        token = client.log_in(arguments.username, password)
        emit({"token": token}, token)
    elif command == "version":
        server = client.api_version()
        emit(
            {"client": API_VERSION, "server": server},
            f"client API {API_VERSION}, server API {server or 'unstated (before 0.2)'}",
        )
    elif command == "study":
        run_study(arguments, client, emit)
    elif command == "pairs":
        pairs = client.pairs(arguments.slug)
        rows = ([pair["item"], pair["token_a"], pair["token_b"], pair["area"]] for pair in pairs)
        emit(pairs, _csv_text(["item", "token_a", "token_b", "area"], rows))
    elif command == "submit":
        submission = client.submit(
            arguments.slug,
            arguments.model_name,
            csv=arguments.scores,
            description=arguments.description,
            wait=not arguments.no_wait,
            timeout=arguments.timeout,
        )
        if arguments.no_wait:
            emit(submission, f"submission {submission['id']} stored: {submission['status']}")
        else:
            emit(submission, evaluation_text(submission))
    elif command == "evaluation":
        if arguments.n0 is None and arguments.k is None:
            submission = client.submission(arguments.submission)
            if submission["evaluation"] is None:
                emit(submission, f"submission {submission['id']} is {submission['status']}")
            else:
                emit(submission, evaluation_text(submission))
        else:
            emit(client.evaluation(arguments.submission, n0=arguments.n0, k=arguments.k))
    elif command == "judge":
        run_judge(arguments, client, emit)
    elif command == "leaderboard":
        board = client.leaderboard(arguments.slug, metric=arguments.metric, n0=arguments.n0)
        emit(board, leaderboard_text(board))
    elif command == "card":
        card = client.card(arguments.slug, timeout=arguments.timeout)
        emit(card, None if arguments.json else client.card_markdown(arguments.slug))


JUDGE_PAIR_COLUMNS = [
    "pair",
    "left_item",
    "left_token_a",
    "left_token_b",
    "right_item",
    "right_token_a",
    "right_token_b",
]


def run_judge(arguments: argparse.Namespace, client: Client, emit) -> None:
    action = arguments.action
    if action == "pairs":
        pairs = client.judge_pairs(arguments.slug)
        emit(
            pairs,
            _csv_text(JUDGE_PAIR_COLUMNS, ([pair[name] for name in JUDGE_PAIR_COLUMNS] for pair in pairs)),
        )
    elif action == "submit":
        judge = client.submit_judge(
            arguments.slug,
            arguments.judge_name,
            file=arguments.decisions,
            description=arguments.description,
            wait=not arguments.no_wait,
            timeout=arguments.timeout,
        )
        emit(
            judge,
            f"judge {judge['id']} stored: {judge['status']}" if arguments.no_wait else judge_text(judge),
        )
    elif action == "evaluation":
        if arguments.n0 is None and arguments.k is None:
            judge = client.judge(arguments.judge)
            emit(
                judge,
                judge_text(judge) if judge.get("evaluation") else f"judge {judge['id']} is {judge['status']}",
            )
        else:
            emit(client.judge_evaluation(arguments.judge, n0=arguments.n0, k=arguments.k))
    elif action == "leaderboard":
        board = client.judge_leaderboard(arguments.slug, metric=arguments.metric, n0=arguments.n0)
        emit(board, leaderboard_text(board))


def run_study(arguments: argparse.Namespace, client: Client, emit) -> None:
    action, slug = arguments.action, getattr(arguments, "slug", None)
    if action == "list":
        studies = client.studies()
        emit(
            studies,
            "\n".join(f"{study['slug']:<30} {study['status']:<9} {study['name']}" for study in studies),
        )
    elif action == "show":
        emit(client.study(slug))
    elif action == "create":
        study = client.create_study(
            arguments.name,
            slug,
            tokens=arguments.tokens,
            max_per_area=arguments.max_per_area,
            **dict(arguments.settings),
        )
        try:
            plan = plan_text(client.plan(slug))
        except ApiError as refusal:  # created all the same: the plan says what to change before the start
            plan = f"no plan yet: {refusal.detail}"
        emit(study, f"study {study['slug']!r} created (draft)\n" + plan)
    elif action == "plan":
        plan = client.plan(slug)
        emit(plan, plan_text(plan))
    elif action == "start":
        study = client.start(slug)
        emit(study, f"study {study['slug']!r} is {study['status']}: annotators' link {client.url}/s/{slug}/")
    elif action == "progress":
        if arguments.watch:
            ballots = client.watch(slug, poll_seconds=arguments.poll_seconds)
        else:
            ballots = client.progress(slug)
        emit(ballots, progress_text(ballots))
    elif action == "close-ballot":
        closing = client.close_ballot(slug)
        emit(closing, closing["detail"])
    elif action == "results":
        emit(client.results(slug))
    elif action == "live":
        live = client.live(slug)
        emit(live, live_text(live))
    elif action == "dataset":
        folder = client.download_dataset(
            slug, arguments.folder, license=arguments.license, language=arguments.language
        )
        files = sorted(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())
        emit(
            {"folder": str(folder), "files": files},
            f"the dataset of {slug!r} is in {folder}: " + ", ".join(files),
        )


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Runs ``yardstick`` with ``argv``; returns the exit status."""
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    arguments = parser().parse_args(argv)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ServerVersionWarning)
        try:
            with Client(
                arguments.url,
                arguments.token,
                progress=False if arguments.quiet else None,
                progress_stream=err,
            ) as client:
                run(arguments, client, out)
            status = 0
        except YardstickError as error:
            err.write(f"error: {error}\n")
            status = 1
        except (TypeError, ValueError) as error:  # input the client refuses before any request
            err.write(f"error: {error}\n")
            status = 1
        finally:
            for warning in caught:
                if issubclass(warning.category, ServerVersionWarning):
                    err.write(f"warning: {warning.message}\n")
    return status
