"""The machine-readable parts of spec/elmo.md (JSON catalogs and schemas), read as package data."""
