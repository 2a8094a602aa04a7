"""The researchers' admin of the collection app: studies with their plan, pools and lifecycle actions
(``study``, with the study's own pages in ``study_pages``), and read-only lists of the rows the
protocol writes (``rows``).

Every write goes through the services (``collection.studies``, ``pools``, ``jobs``, ``lifecycle``) and
every panel reads through the selectors; the admin validates forms, calls one service, turns its
``ServiceError`` into a message a person can act on, and lays the figures out for the templates. The
scoring app extends the study's page with the simulations of its plan, the results and the exports
(``scoring.admin``).
"""

from django.contrib import admin

from collection.admin import languages, rows, study  # noqa: F401  (each registers its ModelAdmins)

admin.site.site_header = "Yardstick"
admin.site.site_title = "Yardstick admin"
admin.site.index_title = "Studies, pools, votes and scores"
