#!/usr/bin/python3
"""Lints deploy/kubernetes (no cluster runs in CI): a structural check of the
manifests against what the server and the image need. The base's resources
parse, each file opens with a comment; the Deployment's replicas, labels and
selectors line up with the Service's, the PodDisruptionBudget's and the
HPA's; probes are on /health at the http port (8080); CPU and memory are
requested; the pod runs as the image's non-root uid; the ConfigMap's TOML
parses, uses only keys of config/thermocline.example.toml and is what
--config reads; terminationGracePeriodSeconds covers the preStop sleep plus
shutdown_grace_s; the Service keeps client-IP affinity; the HPA scales on
thermocline_requests_waiting, a metric server/metrics.cpp exports, and the
Prometheus adapter rule serves it; the GPU overlay requests nvidia.com/gpu
and --device cuda. With kubectl (kustomize) on PATH the overlays are rendered
for real. `--self-test REPO` lints broken copies and fails unless each rule
is reported.

  tests/docker/lint_kube.py REPO_ROOT
  tests/docker/lint_kube.py --self-test REPO_ROOT
"""
import copy
import os
import re
import shutil
import subprocess
import sys
import tomllib

import yaml

BASE = "deploy/kubernetes/base"
GPU = "deploy/kubernetes/gpu"
ADAPTER = "deploy/kubernetes/monitoring/prometheus-adapter-values.yaml"
METRIC = "thermocline_requests_waiting"


def load_yaml_docs(path):
    text = open(path).read()
    return text, [d for d in yaml.safe_load_all(text) if d]


def load_base(repo, problems):
    """The base's documents by kind, from its kustomization's resources."""
    path = os.path.join(repo, BASE, "kustomization.yaml")
    _, docs = load_yaml_docs(path)
    by_kind = {}
    for resource in (docs[0].get("resources") or []):
        file = os.path.join(repo, BASE, resource)
        if not os.path.isfile(file):
            problems.append("%s/kustomization.yaml: resource %s does not exist" % (BASE, resource))
            continue
        text, found = load_yaml_docs(file)
        if not text.startswith("#"):
            problems.append("%s/%s: open with a comment saying what it is for" % (BASE, resource))
        for d in found:
            by_kind.setdefault(d.get("kind"), []).append(d)
    return by_kind


def one(by_kind, kind, problems):
    docs = by_kind.get(kind) or []
    if len(docs) != 1:
        problems.append("%s: expected one %s, found %d" % (BASE, kind, len(docs)))
        return None
    return docs[0]


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def http_get_ok(probe, port_names):
    get = (probe or {}).get("httpGet") or {}
    return get.get("path") == "/health" and (get.get("port") in port_names)


def lint_manifests(by_kind, example_keys, exported_metrics, image_uid, adapter):
    problems = []
    p = problems.append
    dep = one(by_kind, "Deployment", problems)
    cm = one(by_kind, "ConfigMap", problems)
    svc = one(by_kind, "Service", problems)
    pdb = one(by_kind, "PodDisruptionBudget", problems)
    hpa = one(by_kind, "HorizontalPodAutoscaler", problems)
    if dep is None:
        return problems
    spec = dep.get("spec") or {}
    replicas = spec.get("replicas") or 1
    if replicas < 2:
        p("Deployment: replicas %s: run at least 2 (one node's loss must not stop the service)" % replicas)
    template = spec.get("template") or {}
    pod_labels = (template.get("metadata") or {}).get("labels") or {}
    if not matches((spec.get("selector") or {}).get("matchLabels"), pod_labels):
        p("Deployment: selector.matchLabels does not match the pod template's labels")
    pod = template.get("spec") or {}
    containers = pod.get("containers") or []
    if len(containers) != 1:
        p("Deployment: expected one container, found %d" % len(containers))
        return problems
    c = containers[0]
    if not str(c.get("image", "")).split(":")[0].endswith("thermocline"):
        p("Deployment: image %r is not the thermocline image" % c.get("image"))
    ports = c.get("ports") or []
    http = [q for q in ports if q.get("name") == "http"]
    if not http or http[0].get("containerPort") != 8080:
        p("Deployment: name the container port 8080 'http' (the probes and the Service use it)")
    port_names = ("http", 8080)
    for probe in ("readinessProbe", "livenessProbe"):
        if not http_get_ok(c.get(probe), port_names):
            p("Deployment: %s must be an httpGet of /health on port http" % probe)
    if c.get("startupProbe") and not http_get_ok(c.get("startupProbe"), port_names):
        p("Deployment: startupProbe must be an httpGet of /health on port http")
    res = c.get("resources") or {}
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    if "cpu" not in req or "memory" not in req or "memory" not in lim:
        p("Deployment: resources must request cpu and memory and limit memory")
    psc, csc = pod.get("securityContext") or {}, c.get("securityContext") or {}
    run_as = csc.get("runAsUser", psc.get("runAsUser"))
    if not csc.get("runAsNonRoot", psc.get("runAsNonRoot")) or run_as != image_uid:
        p("Deployment: securityContext needs runAsNonRoot: true and runAsUser: %s (the image's USER; "
          "a numeric uid lets the kubelet verify it)" % image_uid)
    if csc.get("allowPrivilegeEscalation") is not False:
        p("Deployment: set allowPrivilegeEscalation: false")

    # The config: parses, known keys only, read through --config.
    grace = None
    args = [str(a) for a in (c.get("args") or [])]
    config_path = args[args.index("--config") + 1] if "--config" in args[:-1] else None
    if cm is None or config_path is None:
        p("Deployment: pass --config with the ConfigMap's TOML file")
    else:
        mounts = {m.get("name"): m.get("mountPath") for m in c.get("volumeMounts") or []}
        volumes = {v.get("name"): v for v in pod.get("volumes") or []}
        found = False
        for key, text in (cm.get("data") or {}).items():
            for vname, mpath in mounts.items():
                if ((volumes.get(vname) or {}).get("configMap") or {}).get("name") == cm["metadata"]["name"] \
                        and config_path == "%s/%s" % (str(mpath).rstrip("/"), key):
                    found = True
            try:
                toml = tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                p("ConfigMap: %s is not TOML: %s" % (key, e))
                continue
            unknown = sorted(set(toml) - example_keys)
            if unknown:
                p("ConfigMap: %s: unknown config key(s) %s (the server refuses unknown keys)" % (key, unknown))
            grace = toml.get("shutdown_grace_s", grace)
        if not found:
            p("Deployment: --config %s is not a file of the mounted ConfigMap" % config_path)
    if grace is None:
        p("ConfigMap: set shutdown_grace_s explicitly (terminationGracePeriodSeconds is sized on it)")
    else:
        pre = ((((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get("command")) or []
        pre_s = float(pre[1]) if len(pre) == 2 and pre[0] == "sleep" else 0.0
        tgp = pod.get("terminationGracePeriodSeconds", 30)
        if tgp < pre_s + grace + 2:
            p("Deployment: terminationGracePeriodSeconds %s < preStop sleep %g + shutdown_grace_s %g + 2"
              % (tgp, pre_s, grace))

    if svc is not None:
        s = svc.get("spec") or {}
        if not matches(s.get("selector"), pod_labels):
            p("Service: selector does not match the pods' labels")
        if not any(q.get("targetPort") in port_names for q in s.get("ports") or []):
            p("Service: target the pods' http port")
        if s.get("sessionAffinity") != "ClientIP":
            p("Service: sessionAffinity ClientIP (each replica's prefix cache is its own)")
    if pdb is not None:
        s = pdb.get("spec") or {}
        if not matches((s.get("selector") or {}).get("matchLabels"), pod_labels):
            p("PodDisruptionBudget: selector does not match the pods' labels")
        if not ("maxUnavailable" in s or (isinstance(s.get("minAvailable"), int) and 1 <= s["minAvailable"] < replicas)):
            p("PodDisruptionBudget: minAvailable must be at least 1 and below replicas (%d)" % replicas)
    if hpa is not None:
        s = hpa.get("spec") or {}
        ref = s.get("scaleTargetRef") or {}
        if ref.get("kind") != "Deployment" or ref.get("name") != dep["metadata"]["name"]:
            p("HorizontalPodAutoscaler: scaleTargetRef must name the Deployment %s" % dep["metadata"]["name"])
        names = [((m.get("pods") or {}).get("metric") or {}).get("name") for m in s.get("metrics") or []
                 if m.get("type") == "Pods"]
        if METRIC not in names:
            p("HorizontalPodAutoscaler: scale on the Pods metric %s (queue depth)" % METRIC)
        for n in names:
            if n not in exported_metrics:
                p("HorizontalPodAutoscaler: metric %s is not exported by server/metrics.cpp" % n)
        if (s.get("minReplicas") or 1) < 2:
            p("HorizontalPodAutoscaler: minReplicas at least 2")
        rules = ((adapter or {}).get("rules") or {}).get("custom") or []
        if not any(METRIC in str(r.get("seriesQuery")) and (r.get("name") or {}).get("as") == METRIC for r in rules):
            p("%s: no adapter rule serving %s" % (ADAPTER, METRIC))
    return problems


def lint_gpu(repo):
    """The GPU overlay, rendered by kustomize when kubectl is there."""
    problems = []
    kubectl = shutil.which("kubectl")
    if kubectl:
        out = subprocess.run([kubectl, "kustomize", os.path.join(repo, GPU)], capture_output=True, text=True)
        if out.returncode != 0:
            return ["%s: kubectl kustomize failed: %s" % (GPU, out.stderr.strip()[:300])]
        for base in (BASE,):
            b = subprocess.run([kubectl, "kustomize", os.path.join(repo, base)], capture_output=True, text=True)
            if b.returncode != 0:
                problems.append("%s: kubectl kustomize failed: %s" % (base, b.stderr.strip()[:300]))
        docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    else:
        print("lint_kube: note: no kubectl; the GPU patch is checked unrendered")
        docs = [d for d in yaml.safe_load_all(open(os.path.join(repo, GPU, "gpu.yaml"))) if d]
    deps = [d for d in docs if d.get("kind") == "Deployment"]
    if not deps:
        return problems + ["%s: no Deployment" % GPU]
    c = ((deps[0]["spec"]["template"]["spec"].get("containers")) or [{}])[0]
    res = c.get("resources") or {}
    req = (res.get("requests") or {}).get("nvidia.com/gpu")
    lim = (res.get("limits") or {}).get("nvidia.com/gpu")
    if not req or req != lim:
        problems.append("%s: request and limit nvidia.com/gpu equally (got %s / %s)" % (GPU, req, lim))
    env = {e.get("name"): e.get("value") for e in c.get("env") or []}
    if not str(env.get("THERMOCLINE_DEVICE", "")).startswith("cuda"):
        problems.append("%s: set THERMOCLINE_DEVICE=cuda" % GPU)
    return problems


def repo_facts(repo):
    example = open(os.path.join(repo, "config/thermocline.example.toml")).read()
    example_keys = set(tomllib.loads(example))
    metrics = set(re.findall(r'"(thermocline_[a-z_]+)"', open(os.path.join(repo, "server/metrics.cpp")).read()))
    user = [l.split()[1] for l in open(os.path.join(repo, "docker/Dockerfile")).read().splitlines()
            if l.startswith("USER ")]
    uid = int(user[-1].split(":")[0]) if user and user[-1].split(":")[0].isdigit() else None
    adapter = yaml.safe_load(open(os.path.join(repo, ADAPTER)))
    return example_keys, metrics, uid, adapter


def lint_repo(repo):
    problems = []
    by_kind = load_base(repo, problems)
    example_keys, metrics, uid, adapter = repo_facts(repo)
    if uid is None:
        problems.append("docker/Dockerfile: USER must be numeric (uid:gid) for runAsNonRoot")
    problems += lint_manifests(by_kind, example_keys, metrics, uid, adapter)
    problems += lint_gpu(repo)
    for root, _, files in os.walk(os.path.join(repo, "deploy/kubernetes")):
        for f in files:
            if f.endswith(".yaml") and not open(os.path.join(root, f)).read().startswith("#"):
                problems.append("%s: open with a comment saying what it is for" % os.path.relpath(os.path.join(root, f), repo))
    return problems


# (rule reported, how to break the real manifests)
def _break(by_kind, kind, fn):
    fn(by_kind[kind][0])


BREAKS = [
    ("replicas", lambda k: _break(k, "Deployment", lambda d: d["spec"].update(replicas=1))),
    ("selector.matchLabels", lambda k: _break(k, "Deployment", lambda d: d["spec"]["selector"].update(matchLabels={"x": "y"}))),
    ("readinessProbe", lambda k: _break(k, "Deployment", lambda d: d["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"].update(path="/"))),
    ("livenessProbe", lambda k: _break(k, "Deployment", lambda d: d["spec"]["template"]["spec"]["containers"][0].pop("livenessProbe"))),
    ("request cpu", lambda k: _break(k, "Deployment", lambda d: d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"].pop("cpu"))),
    ("runAsNonRoot", lambda k: _break(k, "Deployment", lambda d: d["spec"]["template"]["spec"]["securityContext"].update(runAsUser=0))),
    ("terminationGracePeriodSeconds", lambda k: _break(k, "Deployment", lambda d: d["spec"]["template"]["spec"].update(terminationGracePeriodSeconds=10))),
    ("unknown config key", lambda k: _break(k, "ConfigMap", lambda d: d["data"].update({"serve.toml": d["data"]["serve.toml"] + "\nshutdown_grace = 1\n"}))),
    ("--config", lambda k: _break(k, "Deployment", lambda d: d["spec"]["template"]["spec"]["containers"][0].update(args=["--config", "/etc/other.toml"]))),
    ("sessionAffinity", lambda k: _break(k, "Service", lambda d: d["spec"].pop("sessionAffinity"))),
    ("Service: selector", lambda k: _break(k, "Service", lambda d: d["spec"].update(selector={"x": "y"}))),
    ("PodDisruptionBudget: minAvailable", lambda k: _break(k, "PodDisruptionBudget", lambda d: d["spec"].update(minAvailable=2))),
    ("scaleTargetRef", lambda k: _break(k, "HorizontalPodAutoscaler", lambda d: d["spec"]["scaleTargetRef"].update(name="other"))),
    ("not exported", lambda k: _break(k, "HorizontalPodAutoscaler", lambda d: d["spec"]["metrics"][0]["pods"]["metric"].update(name="thermocline_queue"))),
]


def self_test(repo):
    problems = []
    clean = load_base(repo, problems)
    facts = repo_facts(repo)
    problems += lint_manifests(clean, *facts)
    if problems:
        print("lint_kube self-test: the real manifests are not clean: %s" % problems)
        return 1
    missing = []
    for rule, breaker in BREAKS:
        broken = copy.deepcopy(clean)
        breaker(broken)
        found = lint_manifests(broken, *facts)
        print("  %-34s -> %s" % (rule, found))
        if not any(rule in f for f in found):
            missing.append(rule)
    no_rule = lint_manifests(clean, facts[0], facts[1], facts[2], {"rules": {"custom": []}})
    if not any("adapter rule" in f for f in no_rule):
        missing.append("adapter rule")
    if missing:
        print("lint_kube self-test: rules not reported: %s" % ", ".join(missing))
        return 1
    print("lint_kube self-test: all %d rules reported" % (len(BREAKS) + 1))
    return 0


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--self-test":
        return self_test(sys.argv[2])
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = lint_repo(sys.argv[1])
    for p in problems:
        print(p)
    print("lint_kube: %s" % ("%d problems" % len(problems) if problems else "deploy/kubernetes is clean"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
