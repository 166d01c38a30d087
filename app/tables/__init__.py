"""Data tables: definitions, real SQL tables through SQLAlchemy Core, records, CSV, permissions, events.

Each table an admin defines is a row of `data_tables` with its `data_fields`, and a real table
named `dt_<name>` with the columns `id`, `created_at`, `updated_at` and one per field. Schema
changes go through Alembic operations at run time, in the same transaction as the definition.
"""
