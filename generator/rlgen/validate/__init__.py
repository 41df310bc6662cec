"""Checks on rendered manifests before they are written or committed."""
