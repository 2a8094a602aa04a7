"""Every size a study can reach, bounded, with the reason for each bound.

A bound is there so that no request, however well-meant, can exhaust the server: each one is far above
what a crowd study needs (the paper's study: 990 items, M = 20, 19,660 comparisons), and each refusal
says the limit and why, so a researcher knows what to change.
"""

# Items per study. The metrics are measured to 10,000 items (a submission evaluates in about 10 s,
# the card's bootstrap holds 1000 replicates × N floats); 20,000 keeps both within a worker's memory.
MAX_ITEMS = 20_000
# Tokens per study: every item pairs two tokens, so more tokens than items only add rows nobody votes on.
MAX_TOKENS = 10_000
# Items made by one generation inside a web request; larger generations run as a background task.
SYNC_GENERATION_ITEMS = 5_000
# Appearances M of an item per ballot. The paper uses 20; §2.7 asks M_top = n_b·M ≥ 100.
MAX_APPEARANCES = 1_000
# Comparisons of the whole plan (N_comp, Eq. 3). At 6 s each, 500,000 comparisons are 833 person-hours,
# beyond any crowd budget; every comparison is a row, made when its ballot opens.
MAX_TOTAL_COMPARISONS = 500_000
# Ballots n_b: §2.7 suggests n_b ≲ 10; every ballot pauses the collection while it closes.
MAX_BALLOTS = 50
MAX_SECONDS_PER_COMPARISON = 3_600
MAX_LEASE_SECONDS = 24 * 60 * 60
MAX_BALLOT_DEADLINE_HOURS = 24 * 365
MAX_SEED = 2**62
# The longest a participant waits for work before the page offers the exit with the "no work" code:
# crowd platforms time a submission out after an hour or so, and a wait under 30 s is no wait.
MIN_WAIT_SECONDS = 30
MAX_WAIT_SECONDS = 24 * 60 * 60
# Judgements before a participant may press Finish: no participant can make more than a plan's comparisons.
MAX_MIN_JUDGEMENTS = MAX_TOTAL_COMPARISONS
# The pay rate for the consent page's estimate, a currency amount per hour.
MAX_PAY_PER_HOUR = 10_000

# Models one owner may submit for one study: a study sets its own cap (a handful is usual), and every
# submission counts, so the leaderboard's intervals can be adjusted for the owner's variants.
MAX_VARIANTS_PER_OWNER = 1_000

# The hidden test part (collection/split.py): at most nine items in ten, so that a development part stays.
MAX_HIDDEN_SHARE = 0.9

# The response time under which an answer counts as fast: a minute is far above any careful judgement.
MAX_QUALITY_FAST_MS = 60_000

# What a refusal says: the limit and why.
BALLOTS_MESSAGE = (
    f"ballot_count n_b must be at most {MAX_BALLOTS} (§2.7 suggests n_b ≲ 10; every ballot pauses the "
    "collection while it closes)."
)
APPEARANCES_MESSAGE = (
    f"appearances M must be at most {MAX_APPEARANCES:,} (the paper uses 20; every appearance is a comparison "
    "to pay for)."
)
BUDGET_MESSAGE = (
    f"comparison_budget must be at most {MAX_TOTAL_COMPARISONS:,} comparisons (833 person-hours at 6 s each)."
)
SECONDS_MESSAGE = "seconds_per_comparison must be at most 3600 (an hour per comparison)."
LEASE_MESSAGE = (
    "lease_seconds must be at most 86400 (a day): a longer lease keeps a comparison from everyone else."
)
DEADLINE_MESSAGE = "ballot_deadline_hours must be at most 8760 (a year)."
SEED_MESSAGE = f"seed must be a whole number from 0 to {MAX_SEED:,}."
WAIT_MESSAGE = (
    f"max_wait_seconds must be from {MIN_WAIT_SECONDS} to {MAX_WAIT_SECONDS} (a day): the longest a participant "
    "waits for work before the page offers the exit with the no-work code."
)
MIN_JUDGEMENTS_MESSAGE = (
    f"min_judgements must be a whole number from 0 (Finish at any time) to {MAX_MIN_JUDGEMENTS:,} (a plan's "
    "most comparisons): the judgements a participant makes before Finish gives them the completion code."
)
PAY_MESSAGE = (
    f"pay_per_hour must be more than 0 and at most {MAX_PAY_PER_HOUR:,} (a currency amount per hour)."
)
QUALITY_FAST_MS_MESSAGE = (
    f"quality_fast_ms must be a whole number of milliseconds from 1 to {MAX_QUALITY_FAST_MS:,} (a minute); "
    "1000 counts an answer given in under a second as fast."
)
VARIANTS_MESSAGE = f"max_variants_per_owner must be from 1 to {MAX_VARIANTS_PER_OWNER:,}: every model an owner submits counts."
HIDDEN_SHARE_MESSAGE = (
    f"hidden_share must be from 0 (no hidden test part) to {MAX_HIDDEN_SHARE} (nine items in ten hidden); "
    "0.3 keeps three items in ten as the hidden test part."
)
QUALITY_SHARE_MESSAGE = (
    "{name} is a share from 0 to 1 (0.6: six in ten); leave it blank to turn the check off."
)
QUALITY_ALPHA_MESSAGE = (
    "quality_position_alpha is a significance level strictly between 0 and 1 (0.05 is usual); leave it "
    "blank to turn the position-bias check off."
)

# Checks (gold comparisons and instructed-response checks): the share of served comparisons that are
# checks. Above a half, an annotator would spend more time proving attention than giving votes.
MAX_CHECK_RATE = 0.5
# Failed checks at which the results page flags an annotator; past a hundred it is no threshold.
MAX_FAILED_CHECKS = 100
# Checks per study: each is answered at most once per annotator, so a few dozen cover any stream.
MAX_CHECKS = 1_000
CHECK_RATE_MESSAGE = (
    f"check_rate is the share of served comparisons that are checks, from 0 (none) to {MAX_CHECK_RATE:g} "
    "(one in two); 0.1 serves about one check in ten comparisons."
)
FAILED_CHECKS_MESSAGE = (
    f"quality_max_failed_checks must be a whole number from 1 to {MAX_FAILED_CHECKS}: the failed checks at "
    "which an annotator is flagged (2: a second failed check); leave it blank to turn the flag off."
)
CHECKS_MESSAGE = f"a study holds at most {MAX_CHECKS:,} checks; an annotator answers each at most once."
