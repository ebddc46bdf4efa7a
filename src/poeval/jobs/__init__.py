"""Typed jobs: what each stage of the workflow receives, one record per job.

A job is built by one function from the resolved params and the rule's wildcards (its step,
:class:`poeval.jobs.base.Step`, names it); the rule puts it on the command line as one
JSON value (``--job``), the command parses it back into the same type
(:func:`poeval.jobs.base.parse`), and ``poeval provenance`` / ``poeval stale`` rebuild it from the params
of now and compare it with what the output's stamp recorded, instead of re-deriving what the rules pass.
Stage: above the generators, metrics and BPoMP, whose types a job holds; below the report and the entry
points, which build and read jobs (scripts/import_layers.py); the jobs of tables and figures,
which read the report's table definitions, live in the report layer.
"""
