"""Tests of pimem/store/: the schema, layouts and migrations, connections, the store shared with the Pi extension."""
