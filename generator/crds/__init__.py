"""JSON schemas for the kinds the public schema catalog lacks, converted by
``rlgen schemas import`` from KubeRay's RayJob CRD (ray-project/kuberay v1.7.0) and
OpenKruise agents' SandboxSet CRD (openkruise/agents v0.3.0), both Apache-2.0.
``rlgen new`` copies them into the generated repository's ``schemas/``."""
