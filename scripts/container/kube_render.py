#!/usr/bin/python3
"""Renders deploy/kubernetes/base for `podman kube play` as one replica
named NAME (scripts/container/kube_check.sh plays it once per replica, since
podman 4.3 starts only the first pod of a Deployment's replicas): the
ConfigMap and the Deployment as written, except the Deployment's and the
ConfigMap's names, replicas 1, the image given, and the http port published
on 127.0.0.1:HOST_PORT (podman has no Service). The Service, the
PodDisruptionBudget and the HorizontalPodAutoscaler, which podman does not
run, are left out.

  kube_render.py REPO NAME IMAGE HOST_PORT > replica.yaml
"""
import os
import sys

import yaml


def literal_blocks(dumper, text):
    """Multi-line strings (the TOML config) as YAML literal blocks."""
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    repo, name, image, host_port = sys.argv[1:]
    base = os.path.join(repo, "deploy/kubernetes/base")
    kustomization = yaml.safe_load(open(os.path.join(base, "kustomization.yaml")))
    docs = []
    for resource in kustomization["resources"]:
        docs += [d for d in yaml.safe_load_all(open(os.path.join(base, resource))) if d]
    config = [d for d in docs if d["kind"] == "ConfigMap"]
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    if len(config) != 1 or len(deployments) != 1:
        print("kube_render: expected one ConfigMap and one Deployment in %s" % base, file=sys.stderr)
        return 1
    config, deployment = config[0], deployments[0]
    old_config = config["metadata"]["name"]
    config["metadata"]["name"] = name + "-config"
    deployment["metadata"]["name"] = name
    spec = deployment["spec"]
    spec["replicas"] = 1
    pod = spec["template"]["spec"]
    for volume in pod.get("volumes", []):
        if volume.get("configMap", {}).get("name") == old_config:
            volume["configMap"]["name"] = config["metadata"]["name"]
    container = pod["containers"][0]
    container["image"] = image
    http = [p for p in container["ports"] if p.get("name") == "http"]
    if not http:
        print("kube_render: the container has no port named http", file=sys.stderr)
        return 1
    http[0]["hostPort"] = int(host_port)
    http[0]["hostIP"] = "127.0.0.1"
    yaml.SafeDumper.add_representer(str, literal_blocks)
    yaml.safe_dump_all([config, deployment], sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
