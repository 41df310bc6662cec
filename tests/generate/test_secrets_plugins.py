"""The secrets slot: every Secret the plugins declare is delivered in every mode (the README's
kubectl steps, SOPS-encrypted values in Git, ExternalSecrets from Alibaba Cloud KMS), by a
secrets stage that syncs before every stage that reads a Secret."""
from __future__ import annotations

import json

from support.repos import all_objects, build, error_list, one_error_line, plain_manifests, rlgen_in, run_rlgen, REQUIRED

#: An age public key (age-keygen's format) nobody holds the private key of.
RECIPIENT = "age1vngvum279s0kwxpjqddg0rnkt3ckfuuxpp2rf3hddfh9kuq70q7sqyxhuw"
SOPS = ("--plugin", "sops", "--set", f"sops.age_recipients={RECIPIENT}")
ESO = ("--plugin", "external-secrets", "--set", "external-secrets.region=cn-hangzhou",
       "--set", "external-secrets.role_arn=acs:ram::1234:role/eso",
       "--set", "external-secrets.oidc_provider_arn=acs:ram::1234:oidc-provider/ack-rrsa-c0ffee")
MLFLOW = ("--plugin", "mlflow", "--set", "mlflow.tracking_uri=http://mlflow.mlops.svc.cluster.local:5000")


def declared(repo) -> set[tuple[str, str]]:
    """(namespace, name) of every Secret `rlgen secret list` names."""
    rows = json.loads(rlgen_in(repo, "secret", "list", "-o", "json").stdout)["secrets"]
    return {(r["namespace"], r["name"]) for r in rows}


def test_manual_mode_lists_a_kubectl_step_for_every_declared_secret(generate):
    repo = generate(*MLFLOW)
    readme = (repo / "README.md").read_text()
    secrets = declared(repo)
    assert ("rl-training", "mlflow-credentials") in secrets and len(secrets) == 6
    for ns, name in secrets:
        assert f"kubectl create secret generic {name} -n {ns}" in readme
    assert not (repo / "secrets").exists() and not (repo / ".sops.yaml").exists()
    assert "secrets `manual-secrets`" in readme


def test_external_secrets_gives_each_declared_secret_an_external_secret_synced_first(generate):
    repo = generate(*ESO, *MLFLOW)
    objects = build(repo / "secrets")
    externals = {(o["metadata"]["namespace"], o["spec"]["target"]["name"]): o for o in objects
                 if o["kind"] == "ExternalSecret"}
    optional = {(o["metadata"]["namespace"], o["spec"]["target"]["name"]): o
                for o in build(repo / "optional-secrets") if o["kind"] == "ExternalSecret"}
    # the mlflow plugin's Secret too, without it knowing the mode
    assert set(externals) | set(optional) == declared(repo)
    assert set(optional) == {("rl-training", "hf-token"), ("rl-training", "mlflow-credentials")}
    # Only the keys the KMS secret holds: a tracking server needs a password or a token, not both.
    # Each item with the defaults the CRD would fill in, so Argo CD sees no drift in the list.
    defaults = {"conversionStrategy": "Default", "decodingStrategy": "None", "metadataPolicy": "None"}
    assert optional[("rl-training", "mlflow-credentials")]["spec"]["dataFrom"] == [
        {"extract": {"key": "rlgen-rl-training-mlflow-credentials", **defaults}}]
    oss = externals[("rl-training", "oss-credentials")]
    assert [(d["secretKey"], d["remoteRef"]) for d in oss["spec"]["data"]] == [
        ("akId", {"key": "rlgen-rl-training-oss-credentials", "property": "akId", **defaults}),
        ("akSecret", {"key": "rlgen-rl-training-oss-credentials", "property": "akSecret", **defaults})]
    (store,) = [o for o in objects if o["kind"] == "ClusterSecretStore"]
    assert store["spec"]["provider"]["alibaba"]["auth"]["rrsa"]["roleArn"] == "acs:ram::1234:role/eso"
    # Flux: the secrets stage waits for every ExternalSecret to be Ready; everything else depends on it.
    stages = {d["metadata"]["name"]: d for d in plain_manifests(repo) if d["kind"] == "Kustomization"}
    assert stages["secrets"]["spec"]["wait"] is True and "dependsOn" not in stages["secrets"]["spec"]
    # kstatus reads an ExternalSecret without status as ready: the stage checks its Ready condition.
    assert {(e["kind"], e["current"]) for e in stages["secrets"]["spec"]["healthCheckExprs"]} == {
        (kind, "status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')")
        for kind in ("ClusterSecretStore", "ExternalSecret")}
    assert {"name": "secrets"} in stages["sandbox-operator"]["spec"]["dependsOn"]
    result = rlgen_in(repo, "validate", "-o", "json")
    assert result.returncode == 0, result.stdout + result.stderr
    kinds = {s["kind"]: s["location"] for s in json.loads(result.stdout)["schemas"]}
    assert kinds["ExternalSecret"] == "crds/external-secrets.io/externalsecret_v1.json"
    assert kinds["ClusterSecretStore"] == "crds/external-secrets.io/clustersecretstore_v1.json"


def test_no_waited_stage_holds_the_external_secret_of_an_optional_secret(generate):
    """External Secrets fails an ExternalSecret whose KMS secret or property is missing; in a
    stage the others wait for, the optional Hugging Face token or an MLflow key the server does
    not use would hold back the whole repository."""
    repo = generate(*ESO, *MLFLOW)
    optional = {("rl-training", "hf-token"), ("rl-training", "mlflow-credentials")}
    stages = {d["metadata"]["name"]: d["spec"] for d in plain_manifests(repo) if d["kind"] == "Kustomization"}
    waited = {name for name, spec in stages.items() if spec.get("wait")}
    depended_on = {dep["name"] for spec in stages.values() for dep in spec.get("dependsOn") or []}
    for name, spec in stages.items():
        if spec["sourceRef"]["name"] != "flux-system":
            continue  # an upstream root, read from its own repository
        externals = {(o["metadata"]["namespace"], o["spec"]["target"]["name"])
                     for o in build(repo / spec["path"]) if o["kind"] == "ExternalSecret"}
        if externals & optional:
            assert name not in waited and name not in depended_on, name
    assert "optional-secrets" in stages and stages["optional-secrets"]["dependsOn"] == [{"name": "secrets"}]


def test_external_secrets_with_argo_syncs_the_secrets_in_the_first_wave(generate):
    repo = generate(*ESO, "--plugin", "argo")
    apps = {d["metadata"]["name"]: d["metadata"]["annotations"] for d in plain_manifests(repo)
            if d["kind"] == "Application" and d["metadata"]["name"] != "root"}
    waves = {name: int(a["argocd.argoproj.io/sync-wave"]) for name, a in apps.items()}
    assert waves["secrets"] == min(waves.values()) and list(waves.values()).count(waves["secrets"]) == 1
    # The root's waves do not wait for the optional Secrets (the Application health check).
    assert apps["optional-secrets"]["rlgen.io/health-gate"] == "false"
    assert "rlgen.io/health-gate" not in apps["secrets"]


def test_external_secrets_with_an_accesskey_names_the_secret_and_rrsa_needs_its_arns(generate, tmp_path):
    repo = generate(*ESO[:4], "--set", "external-secrets.auth=accesskey")
    (store,) = [o for o in build(repo / "secrets") if o["kind"] == "ClusterSecretStore"]
    ref = store["spec"]["provider"]["alibaba"]["auth"]["secretRef"]
    assert ref["accessKeyIDSecretRef"] == {"name": "alibaba-kms-credentials", "namespace": "external-secrets",
                                           "key": "accessKeyID"}
    _, items = error_list(run_rlgen("new", str(tmp_path / "r"), *REQUIRED, *ESO[:4], "--no-input"))
    assert [i.split("=")[0] for i in items] == ["--set external-secrets.role_arn", "--set external-secrets.oidc_provider_arn"]
    assert not (tmp_path / "r").exists()


def test_sops_decrypts_the_secrets_stage_with_the_age_key_secret(generate):
    repo = generate(*SOPS)
    assert f"age: {RECIPIENT}" in (repo / ".sops.yaml").read_text()
    stages = {d["metadata"]["name"]: d for d in plain_manifests(repo) if d["kind"] == "Kustomization"}
    assert stages["secrets"]["spec"]["decryption"] == {"provider": "sops", "secretRef": {"name": "sops-age"}}
    assert all("decryption" not in s["spec"] for n, s in stages.items() if n != "secrets")
    namespaces = [o for o in build(repo / "secrets") if o["kind"] == "Namespace"]
    # Not flux-system, where the webhook's Secret lives: flux bootstrap creates it before any stage.
    assert {n["metadata"]["name"] for n in namespaces} == {"rl-training", "sandbox-system"}
    assert all(n["metadata"]["annotations"]["kustomize.toolkit.fluxcd.io/ssa"] == "IfNotPresent" for n in namespaces)
    readme = (repo / "README.md").read_text()
    assert "kubectl create secret generic sops-age -n flux-system --from-file=age.agekey=" in readme
    # Argo CD with sops is refused (test_argo_with_sops_is_refused...): nothing to tell its users.
    assert "Argo CD" not in readme and "KSOPS" not in readme
    assert "| 1 | `secrets/` | the Secrets the later stages read, and their namespaces |" in readme
    assert "sops-age" in (repo / "rbac" / "rlgen-reader.yaml").read_text()
    # Before any value is set, validate names each required key that has none (hf-token is optional).
    result = rlgen_in(repo, "validate", "-o", "json")
    problems = json.loads(result.stdout)["problems"]
    assert result.returncode == 1 and {(p["obj"], p["message"].split(" (")[0]) for p in problems} == {
        ("Secret/sandbox-system/sandbox-admin-api-key", "key adminApiKey has no encrypted value"),
        ("Secret/rl-training/sandbox-api-key", "key apiKey has no encrypted value"),
        ("Secret/rl-training/oss-credentials", "key akId has no encrypted value"),
        ("Secret/rl-training/oss-credentials", "key akSecret has no encrypted value"),
        ("Secret/flux-system/git-webhook-token", "key token has no encrypted value")}


def test_argo_with_sops_is_refused_naming_what_works_and_writes_nothing(tmp_path):
    """Argo CD runs plain kustomize: it would apply the encrypted files as the Secrets' values."""
    target = tmp_path / "r"
    for order in (("--plugin", "argo", *SOPS), (*SOPS, "--plugin", "argo")):
        result = run_rlgen("new", str(target), *REQUIRED, *order, "--no-input")
        line = one_error_line(result)
        assert line.startswith("rlgen: error: sops + argo: Argo CD cannot decrypt SOPS"), line
        assert all(name in line for name in ("external-secrets", "manual-secrets", "flux")), line
        assert result.stdout == "" and not target.exists() and list(tmp_path.iterdir()) == []
    # -o json: the same one line on stderr, and nothing on stdout.
    result = run_rlgen("new", str(target), *REQUIRED, "--plugin", "argo", *SOPS, "--no-input", "-o", "json")
    assert "sops + argo" in one_error_line(result) and result.stdout == "" and not target.exists()


def test_sops_refuses_what_is_not_an_age_public_key(tmp_path):
    for bad in ("age1short", "AGE-SECRET-KEY-1QQQQ", f"{RECIPIENT},{RECIPIENT}", ""):
        line = one_error_line(run_rlgen("new", str(tmp_path / "r"), *REQUIRED, "--plugin", "sops",
                                        "--set", f"sops.age_recipients={bad}", "--no-input"))
        assert line.startswith("rlgen: error: sops.age_recipients: ") and "AGE-SECRET-KEY-1QQQQ" not in line
        assert not (tmp_path / "r").exists()


def test_a_plaintext_secret_committed_by_hand_is_one_problem_naming_the_file(repo):
    from support.repos import commit_all

    secret = ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: leaked\n  namespace: rl-training\n"
              "stringData:\n  password: hunter2\n")
    (repo / "base" / "platform" / "leaked.yaml").write_text(secret)
    kustomization = repo / "base" / "platform" / "kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("resources:\n", "resources:\n  - leaked.yaml\n", 1))
    commit_all(repo, "a Secret by hand")
    result = rlgen_in(repo, "validate", "-o", "json")
    problems = [p for p in json.loads(result.stdout)["problems"] if "leaked" in p["obj"]]
    assert result.returncode == 1
    assert problems == [{"source": "base/platform/leaked.yaml", "obj": "Secret/rl-training/leaked",
                         "message": "Secret with values committed to Git: create it on the cluster "
                                    "(README, Secrets) instead", "fix": ""}]
    assert "hunter2" not in result.stdout + result.stderr


def test_an_external_secret_key_no_consumer_reads_is_a_problem(generate, tmp_path):
    import shutil

    from support.repos import commit_all

    repo = shutil.copytree(generate(*ESO), tmp_path / "repo", symlinks=True)
    path = repo / "secrets" / "rl-training.oss-credentials.yaml"
    path.write_text(path.read_text().replace("secretKey: akId", "secretKey: ak_id"))
    commit_all(repo, "a key renamed by hand")
    result = rlgen_in(repo, "validate", "-o", "json")
    messages = {(p["obj"], p["message"]) for p in json.loads(result.stdout)["problems"]}
    assert result.returncode == 1
    assert ("ExternalSecret/rl-training/oss-credentials",
            "key ak_id of Secret oss-credentials is read by no consumer (they read akId, akSecret)") in messages
    assert ("Secret/rl-training/oss-credentials",
            "no ExternalSecret provides akId (used by the OSS volumes (CSI driver) and the dataset Job)") in messages


def test_secret_set_without_sops_refuses_naming_where_the_value_goes_and_reads_none(generate):
    # Nothing is stored, so the command fails: a script that pipes the value in must not go on.
    manual = rlgen_in(generate(), "secret", "set", "oss-credentials", "akSecret", "-o", "table", input="never-read\n")
    line = one_error_line(manual)
    assert "kubectl create secret generic oss-credentials -n rl-training" in line and "never-read" not in line
    for output in ("table", "json"):
        eso = rlgen_in(generate(*ESO), "secret", "set", "oss-credentials", "akSecret", "-o", output, input="never\n")
        line = one_error_line(eso)
        assert eso.stdout == "" and "never" not in line
        assert ("aliyun kms PutSecretValue --region cn-hangzhou --SecretName rlgen-rl-training-oss-credentials "
                '--VersionId "$(date +%s)" --SecretData "$(cat rlgen-rl-training-oss-credentials.json)"') in line
        assert line.startswith("rlgen: error: the external-secrets plugin keeps Secret values outside Git, so "
                               "rlgen reads and stores no value: put 'akSecret' in KMS secret")
    assert one_error_line(rlgen_in(generate(), "secret", "set", "oss-credentials", "nope")) == (
        "rlgen: error: Secret rl-training/oss-credentials has no key 'nope' (keys: akId, akSecret)")
    assert "reads no Secret 'wandb'" in one_error_line(rlgen_in(generate(), "secret", "set", "wandb", "key"))
