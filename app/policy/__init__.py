"""The assistance contract's pure rules, below the skills that enforce them and the areas that use them.

What an answer claims (claims.py), what a proposal may be (proposals.py) and the JSON Schema subset a
client may declare for a target (schema_subset.py). Standard library and jsonschema only: no database,
no Flask, nothing else of the app (the lowest layer of the import-linter contract).
"""
