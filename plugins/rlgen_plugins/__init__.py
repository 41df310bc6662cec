"""rlgen's built-in plugins, one module each, registered through the ``rlgen`` entry points."""
