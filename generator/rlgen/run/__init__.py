"""A training run, in one place: ``runs/<run>/`` and its entry in the runs index.

- :mod:`~rlgen.run.files`: its files read back and checked (``run.yaml``, its kustomization,
  the training base's ``trainer.yaml``), and the runs index (which runs it lists).
- :mod:`~rlgen.run.folder`: its files written (the keys of ``run.yaml``, its kustomization with
  its size, labels and pinned RayJob name, its index entry), and its labels: given, read back.
- :mod:`~rlgen.run.naming`: its RayJob's name, by the repository's naming scheme.
- :mod:`~rlgen.run.config`: what its files make: the effective trainer config, its size, the
  keys it changes and the ones rlgen owns.

A run's other places (where its checkpoints go) belong here too, each a module of its own.
``rlgen run`` (:mod:`rlgen.runs`), ``new``, ``update``, ``validate``, ``diff``, ``status`` and
the renders all reach a run through this package. The paths (``runs/<run>/``,
``overlays/<env>/runs/``) are :mod:`rlgen.repo.layout`'s, which a command may check a path
against without loading this package.
"""
