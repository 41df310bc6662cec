"""The README's *First sync*: a runbook from an empty cluster and no remote to every stage Ready,
its steps in order, each with the commands to run or the section that holds them, and each
cluster's exact bootstrap command."""
from __future__ import annotations

import json
import re
import shlex

from rlgen.spec import Spec
from rlgen.tools.toolchain_pins import tested_version

#: KubeRay's Helm chart repository (ray-project/kuberay-helm), whose chart versions are the releases.
KUBERAY_CHART = "https://ray-project.github.io/kuberay-helm/"
#: ACK add-ons by what the repository's files hold: (marker, add-on names, why).
ADDONS = (
    (b"ossplugin.csi.alibabacloud.com", "`csi-plugin` and `csi-provisioner`", "they mount the OSS volumes"),
    (b"pod-identity.alibabacloud.com/injection", "`ack-pod-identity-webhook`",
     "it gives the Jobs their RAM role's credentials (RRSA, which the cluster must have enabled)"),
    (b"kind: NetworkPolicy", "the Terway network plugin with NetworkPolicy enabled",
     "Flannel ignores NetworkPolicies, which close the sandboxes and the Ray dashboard"),
)


def steps(spec: Spec, files: dict[str, bytes], secrets_section: str, sections: list[str],
          kuberay_namespace: str) -> list[dict]:
    """Each step: its title and its text (commands in ``sh`` blocks, run in order)."""
    sync = next((s for s in sections if s.lstrip().startswith("## Sync")), "")
    installs = [s for s in [secrets_section, *sections] if "helm install" in s]
    roles = [s for s in [secrets_section, *sections] if "aliyun ram CreateRole" in s]
    found = [step for step in (
        ("Create the remote and push", _remote(spec)),
        ("Install what the cluster needs", _prerequisites(spec, files, installs, kuberay_namespace)),
        ("Create the RAM roles", "Each with its trust policy, as "
         + ", ".join(_link(s) for s in roles) + " says (`aliyun` CLI, or the RAM console).") if roles else None,
        ("Build and push the images", "As [Images to build and push before the first sync]"
         "(#images-to-build-and-push-before-the-first-sync) says: the `images` workflow does it on the push "
         "above, or its commands by hand."),
        ("Give the Secrets their values", f"As {_link(secrets_section) or 'the secrets plugin section'} says."),
        ("Bootstrap the sync engine", f"As {_link(sync) or 'the sync plugin section'} says, with its credentials; "
         "[Clusters and environments](#clusters-and-environments) gives each cluster's own command."),
        ("Watch it come up", "Every stage Ready and the first run's pods scheduled ([Checks](#checks)):\n\n"
         "```sh\nrlgen status --wait --timeout 15m\n```"),
    ) if step]
    return [{"title": title, "text": text} for title, text in found]


def _remote(spec: Spec) -> str:
    url = shlex.quote(spec.git_url)
    return (f"`rlgen new` made no remote (it keeps an empty clone's `origin`). Create the empty repository "
            f"{spec.git_url} at the Git host (no README, no licence: its first commits are these), then push: the "
            "images workflow and the sync engine read it from there.\n\n```sh\n"
            f"git remote get-url origin >/dev/null 2>&1 || git remote add origin {url}\n"
            f"git push -u origin HEAD:{shlex.quote(spec.git_branch)}\n```")


def _prerequisites(spec: Spec, files: dict[str, bytes], installs: list[str], kuberay_namespace: str) -> str:
    """The add-ons ACK installs, KubeRay at the release rlgen's tests run, and the plugins' own."""
    text = "\n".join(f"- {names}: {why}." for marker, names, why in ADDONS
                     if any(marker in content for content in files.values()))
    version = tested_version("kuberay")
    batch = " --set batchScheduler.name=volcano" if spec.gang_scheduling == "volcano" else ""
    text = ("In the ACK console (*Add-ons*) or with `aliyun cs InstallClusterAddons`:\n\n" + text + "\n\n"
            if text else "")
    text += (f"KubeRay {version} (the release rlgen's tests run), in `{kuberay_namespace}`, the namespace the Ray "
             "dashboard's NetworkPolicy admits:\n\n```sh\n"
             f"helm install kuberay-operator kuberay-operator --repo {KUBERAY_CHART} --version "
             f"{version.removeprefix('v')} --namespace {kuberay_namespace} --create-namespace{batch}\n```")
    if installs:
        text += "\n\nThen what the plugins need, as " + ", ".join(_link(s) for s in installs) + " says."
    return text + ("\n\n`rlgen doctor` (read-only) then names only what the next steps create: the Secrets and "
                   "the sync engine.")


def cluster_bootstraps(sections: list[str], main: str, clusters: list[str],
                       own_sections: dict[str, list[str]]) -> list[dict]:
    """Each cluster's exact bootstrap: the sync section's first command block that names the main
    cluster's folder, for the cluster's own; before it, the RAM roles a cluster's own answers
    change (``own_sections``: the sections as that cluster reads them), which the main cluster's lack."""
    sync = next((s for s in sections if s.lstrip().startswith("## Sync")), "")
    block = next((b for b in _blocks(sync) if f"clusters/{main}" in b), "")
    if not block:
        return []
    shared = _role_blocks(sections)
    trusted = {m[1]: json.loads(m[2]) for b in shared for m in CREATE_ROLE.finditer(b)}
    out = []
    for c in clusters:
        roles = [_own_role(b, trusted) for b in _role_blocks(own_sections.get(c, [])) if b not in shared]
        out.append({"name": c, "roles": roles, "block": block.replace(f"clusters/{main}", f"clusters/{c}").replace(
            f"flux-{main}-deploy-key", f"flux-{c}-deploy-key")})
    return out


#: A role created with its trust policy, as the plugins' README sections write it.
CREATE_ROLE = re.compile(r"aliyun ram CreateRole --RoleName (\S+) --AssumeRolePolicyDocument '([^']*)'")


def _own_role(block: str, trusted: dict[str, dict]) -> str:
    """A cluster's role block: its own role as written; a role the clusters share (same name)
    gets this cluster's OIDC provider added to the trust policy so far (``trusted``, updated:
    the clusters are bootstrapped in the table's order), by UpdateRole, as CreateRole would fail."""
    found = CREATE_ROLE.search(block)
    if not found or found[1] not in trusted:
        return block
    policy = trusted[found[1]]
    for statement, own in zip(policy["Statement"], json.loads(found[2])["Statement"]):
        federated = statement.get("Principal", {}).get("Federated")
        if federated is not None:
            federated += [p for p in own["Principal"]["Federated"] if p not in federated]
    return (f"aliyun ram UpdateRole --RoleName {found[1]} --NewAssumeRolePolicyDocument "
            f"'{json.dumps(policy, separators=(',', ':'))}'\n")


def _blocks(section: str) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", section, re.S)


def _role_blocks(sections: list[str]) -> list[str]:
    """The command blocks that create RAM roles, with their trust policies."""
    return [b for s in sections for b in _blocks(s) if "aliyun ram CreateRole" in b]


def _link(section: str) -> str:
    heading = section.lstrip().split("\n", 1)[0] if section.lstrip().startswith("## ") else ""
    return f"[{heading[3:]}](#{anchor(heading[3:])})" if heading else ""


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower-case, punctuation dropped, spaces as hyphens."""
    kept = "".join(c for c in heading.lower() if c.isalnum() or c in " -_")
    return kept.strip().replace(" ", "-")
