"""A throwaway control plane that syncs a repository before it is merged (``rlgen e2e``), and the
one implementation of it rlgen's own tests use."""
