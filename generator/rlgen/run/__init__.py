"""A training run, in one place: ``runs/<run>/`` and its entry in the runs index.

- :mod:`~rlgen.run.files`: its files read back and checked (``run.yaml``, its kustomization,
  the training base's ``trainer.yaml``), the runs index (where it is, what it lists), its labels.
- :mod:`~rlgen.run.folder`: its files written (the keys of ``run.yaml``, its kustomization with
  its size, labels and pinned RayJob name, its index entry), and the labels a run is given.
- :mod:`~rlgen.run.naming`: its RayJob's name, by the repository's naming scheme.
- :mod:`~rlgen.run.config`: what its files make: the effective trainer config, its size, the
  keys it changes and the ones rlgen owns.

A run's other places (where its checkpoints go) belong here too, each a module of its own.
``rlgen run`` (:mod:`rlgen.runs`), ``new``, ``update``, ``validate``, ``diff``, ``status`` and
the renders all reach a run through this package.
"""
