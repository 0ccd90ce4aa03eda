"""Generates the typed models and resource methods of the ``merx`` package from the OpenAPI
document. Run ``python3 sdks/python/scripts/generate.py`` (``--check`` to fail on stale files)."""
