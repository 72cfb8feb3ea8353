"""The REST API (`/api/v1/`): scoped reads for scripts and snapshot prefetch."""
