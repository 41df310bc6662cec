"""The Git host's push webhook: Flux's Receiver and Argo CD's webhook secret, shaped by the Git
host of the repository's URL, their token Secret delivered by whichever secrets plugin is chosen
(with the label Argo CD selects its Secrets by, and never a stage of its own for the sync
engine's namespace; argo with sops is refused, tests/generate/test_secrets_plugins.py), and the README steps that connect the host. After the fetch, the stages'
wait for each other: kustomize-controller's --requeue-dependency as ``flux bootstrap`` installs
it from the generated flux-system kustomization."""
from __future__ import annotations

import json
import shutil

import pytest
from support.flux import bootstrapped_args
from support.repos import GIT_URL, REQUIRED, build, commit_all, error_list, one_error_line, ok, plain_manifests, rlgen_in, run_rlgen

ESO = ("--plugin", "external-secrets", "--set", "external-secrets.region=cn-hangzhou",
       "--set", "external-secrets.role_arn=acs:ram::1234:role/eso",
       "--set", "external-secrets.oidc_provider_arn=acs:ram::1234:oidc-provider/ack-rrsa-c0ffee")
PART_OF_ARGOCD = {"app.kubernetes.io/part-of": "argocd"}


def receiver(repo) -> dict:
    (found,) = [d for d in plain_manifests(repo) if d["kind"] == "Receiver"]
    return found


def secrets(repo) -> dict[str, dict]:
    return {r["name"]: r for r in json.loads(rlgen_in(repo, "secret", "list", "-o", "json").stdout)["secrets"]}


@pytest.mark.parametrize("answers, kind, events", [
    (("rlgen.git_url=https://github.com/acme/rl-repo.git",), "github", ["push"]),
    (("rlgen.git_url=git@gitlab.com:acme/rl-repo.git",), "gitlab", ["Push Hook"]),
    # Hosts whose name does not tell: a GitHub Enterprise Server, a self-managed GitLab, another.
    (("rlgen.git_url=https://github.acme-corp.net/ml/rl-repo.git", "rlgen.git_host=github"), "github", ["push"]),
    (("rlgen.git_url=ssh://git@gitlab.acme-corp.net/ml/rl-repo.git", "rlgen.git_host=gitlab"), "gitlab",
     ["Push Hook"]),
    ((f"rlgen.git_url={GIT_URL}", "rlgen.git_host=generic-hmac"), "generic-hmac", None),
], ids=["github.com", "gitlab.com", "github-enterprise", "gitlab-self-managed", "generic-hmac"])
def test_flux_receives_the_push_webhook_of_the_repositorys_git_host(generate, answers, kind, events):
    repo = generate(*(a for answer in answers for a in ("--set", answer)))
    found = receiver(repo)
    assert found["metadata"] == {"name": "git-push", "namespace": "flux-system"}
    assert found["spec"]["type"] == kind and found["spec"].get("events") == events
    # The repository's own source, the one `flux bootstrap` creates, fetched at once.
    assert found["spec"]["resources"] == [
        {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository", "name": "flux-system"}]
    token = secrets(repo)[found["spec"]["secretRef"]["name"]]
    assert token["namespace"] == "flux-system" and list(token["keys"]) == ["token"]
    readme = (repo / "README.md").read_text()
    assert "kubectl -n flux-system get receiver git-push -o jsonpath='{.status.webhookPath}'" in readme
    # What the push still waits for after the fetch, and where it is set.
    assert "`--requeue-dependency`: 5s here (`flux.requeue_dependency`)" in readme
    result = rlgen_in(repo, "validate", "--offline", "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    kinds = {s["kind"]: s["location"] for s in json.loads(result.stdout)["schemas"]}
    assert kinds["Receiver"] == "crds/notification.toolkit.fluxcd.io/receiver_v1.json"


def test_a_host_whose_name_does_not_tell_its_kind_is_asked_never_guessed(tmp_path):
    # Off a terminal: one error naming the answer and why it is needed, nothing written.
    args = [a for a in REQUIRED if not a.startswith("rlgen.git_host=")]
    args = [a for i, a in enumerate(args) if not (a == "--set" and args[i + 1:i + 2] == ["--set"])]
    _, (item,) = error_list(run_rlgen("new", str(tmp_path / "repo"), *args, "--no-input"))
    assert item.startswith("--set rlgen.git_host=VALUE (") and "git.rl.test is neither github.com nor gitlab.com" in item
    assert not (tmp_path / "repo").exists()
    # A kind that contradicts the host's name is refused.
    line = one_error_line(run_rlgen("new", str(tmp_path / "repo"), *REQUIRED, "--set",
                                    "rlgen.git_url=https://github.com/acme/rl-repo.git", "--set", "rlgen.git_host=gitlab",
                                    "--no-input"))
    assert "rlgen.git_host: github.com is github" in line, line


def test_argo_refuses_a_generic_hmac_host(tmp_path):
    line = one_error_line(run_rlgen("new", str(tmp_path / "repo"), *REQUIRED, "--plugin", "argo",
                                    "--set", "rlgen.git_host=generic-hmac", "--no-input"))
    assert "rlgen.git_host=generic-hmac" in line and "github or gitlab" in line, line
    assert not (tmp_path / "repo").exists()


def test_a_receiver_of_a_type_notification_controller_lacks_is_a_problem(generate, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(generate(), repo)
    path = next((repo / "clusters").glob("*/git-push.yaml"))
    path.write_text(path.read_text().replace("type: github", "type: codeup"))
    result = rlgen_in(repo, "validate", "--offline", "-o", "json")
    assert result.returncode == 1, result.stdout + result.stderr
    assert any(p["obj"].startswith("Receiver/") for p in json.loads(result.stdout)["problems"]), result.stdout


@pytest.mark.parametrize("url, key", [("https://github.com/acme/rl-repo.git", "webhook.github.secret"),
                                      ("https://gitlab.com/acme/rl-repo.git", "webhook.gitlab.secret")])
def test_argo_points_argocd_secret_at_a_labelled_secret_of_the_secrets_slot(generate, url, key):
    repo = generate("--plugin", "argo", "--set", f"rlgen.git_url={url}")
    token = secrets(repo)["git-webhook-token"]
    assert token["namespace"] == "argocd"
    readme = (repo / "README.md").read_text()
    # Manual mode: the Secret is created and labelled; argocd-secret holds only the reference.
    assert ("kubectl create secret generic git-webhook-token -n argocd \\\n"
            "    --from-literal=token=\"$GIT_WEBHOOK_TOKEN\"\n"
            "  kubectl label secret git-webhook-token -n argocd app.kubernetes.io/part-of=argocd\n") in readme
    assert (f"kubectl -n argocd patch secret argocd-secret --type merge "
            f"-p '{{\"stringData\": {{\"{key}\": \"$git-webhook-token:token\"}}}}'") in readme
    assert "/api/webhook" in readme
    # Argo CD's namespace, made before its Secret as the other Secrets' are: the README installs
    # Argo CD after the Secrets, and the installation applies into it.
    secrets_section = readme.split("## Secrets to create before the first sync", 1)[1].split("\n## ", 1)[0]
    assert "kubectl create namespace argocd --dry-run=client -o yaml | kubectl apply -f -\n" in secrets_section
    assert not any(d["kind"] == "Receiver" for d in plain_manifests(repo))


def test_external_secrets_labels_the_webhook_secret_for_argo(generate):
    repo = generate("--plugin", "argo", *ESO)
    objects = build(repo / "secrets")
    externals = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ExternalSecret"}
    # Argo CD's own namespace exists before any stage: a stage creating it would have to come
    # before the root that applies every stage.
    assert "argocd" not in {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    external = externals.pop("git-webhook-token")
    assert external["spec"]["target"]["template"] == {"metadata": {"labels": PART_OF_ARGOCD}}
    # The Secrets nobody selects by label stay as they were.
    assert externals and all("template" not in o["spec"]["target"] for o in externals.values())


def test_flux_bootstrap_installs_kustomize_controller_with_a_short_dependency_requeue(generate, tmp_path):
    repo = generate()
    folder = repo / "clusters" / "production" / "flux-system"
    # As Flux's bootstrap customization lays it out: the two files bootstrap writes, empty until it does.
    assert (folder / "gotk-components.yaml").read_text() == "" and (folder / "gotk-sync.yaml").read_text() == ""
    args = bootstrapped_args(repo, "production")
    assert "--watch-all-namespaces" in args and args[-1] == "--requeue-dependency=5s"
    assert bootstrapped_args(generate("--set", "flux.requeue_dependency=2s"), "production")[-1] == \
        "--requeue-dependency=2s"
    line = one_error_line(run_rlgen("new", str(tmp_path / "r"), *REQUIRED, "--set", "flux.requeue_dependency=soon", "--no-input"))
    assert "flux.requeue_dependency" in line
    # Argo CD has no dependency requeue to set.
    assert not (generate("--plugin", "argo") / "clusters" / "production" / "flux-system").exists()


def test_an_update_keeps_what_flux_bootstrap_wrote(repo):
    folder = repo / "clusters" / "production" / "flux-system"
    components = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: flux-system\n"
    sync = ("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n"
            "  namespace: flux-system\nspec:\n  interval: 1m0s\n  ref:\n    branch: main\n  url: " + GIT_URL + "\n")
    (folder / "gotk-components.yaml").write_text(components)
    (folder / "gotk-sync.yaml").write_text(sync)
    commit_all(repo, "Add Flux v2.9.3 component manifests")

    ok(rlgen_in(repo, "update", "--set", "flux.requeue_dependency=10s"))

    assert (folder / "gotk-components.yaml").read_text() == components
    assert (folder / "gotk-sync.yaml").read_text() == sync
    assert "value: --requeue-dependency=10s" in (folder / "kustomization.yaml").read_text()
