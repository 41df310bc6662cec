"""What the secrets plugins share: the kubectl command of a Secret, the Namespaces of the
``secrets`` stage."""
from __future__ import annotations

from rlgen.plugin_api import Document, SecretRef

#: Flux creates these Namespaces when missing and never changes or prunes them
#: (kustomize-controller: ssa IfNotPresent, prune disabled); the stage that owns each one
#: (the platform, an upstream root) still applies it. Argo CD: never pruned from here.
ADOPTED_NAMESPACE = {
    "kustomize.toolkit.fluxcd.io/ssa": "IfNotPresent",
    "kustomize.toolkit.fluxcd.io/prune": "disabled",
    "argocd.argoproj.io/sync-options": "Prune=false",
}


def kubectl_create(s: SecretRef, indent: str = "  ") -> str:
    """``kubectl create secret generic`` of ``s``, each value read from a shell variable, and
    ``kubectl label`` of the labels it must carry."""
    values = "".join(f' \\\n{indent}--from-literal={k}="${s.env(k)}"' for k in s.keys)
    return f"kubectl create secret generic {s.name} -n {s.namespace}{values}" + kubectl_label(s, indent[:-2])


def kubectl_label(s: SecretRef, indent: str = "") -> str:
    """The line that labels Secret ``s`` after it is created ("" when it needs no label)."""
    if not s.labels:
        return ""
    return f"\n{indent}kubectl label secret {s.name} -n {s.namespace} " + " ".join(f"{k}={v}" for k, v in s.labels)


def namespace_names(secrets: list[SecretRef]) -> list[str]:
    """The namespaces of the Secrets that must exist before their Secrets can: all but the sync
    engine's own, which the engine's installation creates."""
    engine = {s.namespace for s in secrets if s.engine_namespace}
    return sorted({s.namespace for s in secrets} - engine)


def namespaces(secrets: list[SecretRef]) -> list[Document]:
    """The Namespaces the Secrets live in, so the ``secrets`` stage can run before the stages
    that create them."""
    return [Document({"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": ns, "annotations": dict(ADOPTED_NAMESPACE)}},
                     "Created here when missing, so the Secrets can come first; the stage that owns the\n"
                     "namespace still applies it, and this one never changes or prunes it.")
            for ns in namespace_names(secrets)]
