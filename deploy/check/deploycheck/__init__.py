"""The checks of `make deploy-check`, one module per artefact of deploy/ (deploy/check/checks.py runs them)."""
