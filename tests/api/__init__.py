"""Tests of the HTTP API, the database layer, the client and their commands."""
