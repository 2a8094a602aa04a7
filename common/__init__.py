"""Plumbing shared by every app: errors, API error handling, parsers, pagination, throttles, CSV, tasks.

Apps import from here; this package imports from no app (imports run one way, STYLE.md).
"""
