"""The words of a plan search's result (``scoring.planning.plan_search_run``'s JSON), for ``manage.py plan``
and the admin's panel: the plan, its cost, the confidence of the answer, and what stands beside it."""

from __future__ import annotations


def not_reached(result: dict) -> str:
    """Why no plan is returned, and what to change."""
    text = result["target"]["text"]
    confidence = f"{result['confidence']:.0%}"
    searched = result["searched"]
    if result["failed_confirmations"] and searched["confirmations"] >= searched["max_confirmations"]:
        return (
            f"no plan was confirmed: the {searched['confirmations']} cheapest plans that reached {text} with "
            f"{confidence} confidence on the search's repetitions missed it on fresh ones; search again with more "
            "repetitions, or lower the target"
        )
    return (
        f"no plan of the grid reaches {text} with {confidence} confidence"
        + ("" if result["complete"] else " within the bound of simulations (--max-simulations)")
        + ": lower the target, or lower the voter noise"
    )


def plan_text(plan: dict) -> str:
    """``uniform (one ballot, n_b = 1), M = 8`` or ``adaptive, n_b = 7, α = 0.5, M = 4 (ballots of …)``."""
    if plan["protocol"] == "uniform":
        return f"uniform (one ballot, n_b = 1), M = {plan['appearances']}"
    return (
        f"adaptive, n_b = {plan['ballot_count']}, α = {plan['keep_fraction']:g}, M = {plan['appearances']} "
        f"(ballots of {' → '.join(f'{s:,}' for s in plan['sizes'])} items)"
    )


def cost_text(cost: dict) -> str:
    money = ""
    if cost["money"] is not None:
        money = f", {cost['money']:,.2f} {cost['currency']} at {cost['pay_per_hour']:g} per hour".replace(
            " ,", ","
        )
        money = money.replace("  at", " at")
    return (
        f"{cost['comparisons']:,} comparisons (N_comp, Eq. 3), {cost['hours']:,.2f} hours of voting at "
        f"{cost['seconds_per_comparison']:g} s each (Eq. 10){money}"
    )


def confidence_text(result: dict, answer: dict) -> str:
    """What the plan reached, with which confidence, on which repetitions."""
    statistic = result["target"]["statistic_label"]
    threshold = result["target"]["threshold"]
    search, confirmation = answer["search"], answer["confirmation"]
    where = f" (area {confirmation['area']}, the lowest bound)" if confirmation.get("area") else ""
    return (
        f"Confirmed on {confirmation['repetitions']} fresh repetitions{where}: {statistic} "
        f"{confirmation['statistic']:.3f}, its {confirmation['level']:.1%} lower bound "
        f"{confirmation['bound']:.3f} ≥ {threshold:g} (confirmation {confirmation['attempt'] + 1} of at most "
        f"{result['searched']['max_confirmations']}, each at {confirmation['level']:.1%}, so the answer holds "
        f"with {result['confidence']:.0%} confidence). On the search's {search['repetitions']} repetitions: "
        f"{search['statistic']:.3f}, its {result['confidence']:.0%} lower bound {search['bound']:.3f}."
    )


def without_warnings_text(result: dict) -> str:
    """The cheapest plan without §2.7 warnings beside an answer that has some, or why there is none."""
    other = result["without_warnings"]
    if other is not None:
        return (
            f"Cheapest plan without §2.7 warnings: {plan_text(other['plan'])}; {cost_text(other['cost'])}. "
            + confidence_text(result, other)
        )
    if result["warning_free_in_grid"] is False:
        return "No plan of the grid is free of §2.7 warnings for these items, so none is shown beside it."
    return "No plan of the grid without §2.7 warnings reaches the target and is confirmed."
