#!/usr/bin/python3
"""Lints docker/Dockerfile, docker/Dockerfile.cuda and docker/compose.yaml.

No Docker engine runs on our machines and Debian 12 packages no Dockerfile
linter (hadolint is not in Debian), so this checks, by hand, the hadolint
rules that matter here plus what the images promise: pinned base images,
COPY not ADD, exec-form ENTRYPOINT, a numeric non-root USER (uid 10001, as
scripts/runtime_setup.sh creates it), apt hygiene, multi-stage builds whose
runtime stage installs packages only through scripts/runtime_setup.sh,
OCI labels with the version and git revision, EXPOSE 8080, a HEALTHCHECK on
/health that needs no curl, the /models volume, host 0.0.0.0 through
THERMOCLINE_* variables, every repo script a RUN calls exists and is run by
CI too, the CPU and CUDA images run the same repo scripts in the same order,
every package scripts/setup.sh installs is recorded as checked under its
Ubuntu 24.04 name (tests/docker/ubuntu-noble-packages.txt, for the CUDA
build stage), and .dockerignore keeps build folders and local dependencies
out. `--self-test` lints broken samples and fails unless each broken rule is
reported. scripts/container_check.sh builds and runs the CPU image for real.

  tests/docker/lint_docker.py REPO_ROOT
  tests/docker/lint_docker.py --self-test
"""
import glob
import os
import re
import shlex
import sys

import yaml

# The uid:gid scripts/runtime_setup.sh gives the `thermocline` user.
RUNTIME_UID = 10001

# The repo scripts a Dockerfile may call, and the CI step that runs each.
SCRIPTS_RUN_BY_CI = {
    "scripts/install.sh": "tests/integration/default_model_test.cpp",
    "scripts/runtime_setup.sh": "tests/docker/check_docker.sh",
    "scripts/setup.sh": "scripts/test.sh",
    "scripts/build.sh": "scripts/test.sh",
}


def instructions(text):
    """(line number, INSTRUCTION, arguments) with continuations joined."""
    out, buf, start = [], "", 0
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not buf and (not stripped or stripped.startswith("#")):
            continue
        if buf and stripped.startswith("#"):
            continue
        if not buf:
            start = n
        if stripped.endswith("\\"):
            buf += stripped[:-1] + " "
            continue
        buf += stripped
        word, _, rest = buf.partition(" ")
        out.append((start, word.upper(), rest.strip()))
        buf = ""
    return out


def lint_dockerfile(name, text, repo=None, cuda=False):
    """Problems found in one Dockerfile, as 'name:line: message' strings."""
    problems = []
    ins = instructions(text)

    def problem(line, msg):
        problems.append("%s:%d: %s" % (name, line, msg))

    args = {}
    stages = []  # [first line, image, [instructions]]
    for line, word, rest in ins:
        if word == "ARG":
            key, _, value = rest.partition("=")
            args[key] = value
            if stages:
                stages[-1][2].append((line, word, rest))
            continue
        if word == "FROM":
            image = rest.split()[0]
            resolved = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), ""), image)
            if ":" not in resolved.split("/")[-1] or resolved.endswith(":latest") or resolved.endswith(":"):
                problem(line, "FROM %s: pin the base image to a tag, not latest (DL3006/DL3007)" % image)
            stages.append([line, resolved, []])
            continue
        if not stages:
            problem(line, "%s before the first FROM" % word)
            continue
        stages[-1][2].append((line, word, rest))
        if word == "ADD":
            problem(line, "use COPY, not ADD (DL3020)")
        if word in ("ENTRYPOINT", "CMD") and not rest.startswith("["):
            problem(line, "%s in shell form; use the exec (JSON) form (DL3025)" % word)
        if word == "WORKDIR" and not rest.startswith("/"):
            problem(line, "WORKDIR %s: use an absolute path (DL3000)" % rest)
        if word == "RUN":
            if re.search(r"\bsudo\b", rest):
                problem(line, "RUN uses sudo (DL3004)")
            if re.search(r"apt-get\s+install", rest):
                if "--no-install-recommends" not in rest:
                    problem(line, "apt-get install without --no-install-recommends (DL3015)")
                if not re.search(r"\s-y\b|--yes", rest):
                    problem(line, "apt-get install without -y (DL3014)")
                if "rm -rf /var/lib/apt/lists" not in rest:
                    problem(line, "apt lists not removed in the same RUN (DL3009)")
            for script in re.findall(r"(?:^|[\s/])(scripts/[\w./-]+)", rest):
                check_script(problem, line, script, repo)
        if word == "COPY":
            for src in shlex.split(rest)[:-1]:
                if src.startswith("scripts/"):
                    check_script(problem, line, src, repo)

    if not stages:
        return ["%s: no FROM" % name]
    final = stages[-1]
    final_ins = final[2]
    words = [w for _, w, _ in final_ins]
    users = [r for _, w, r in final_ins if w == "USER"]
    if not users or users[-1].split(":")[0] in ("root", "0"):
        problem(final[0], "the final stage must switch to a non-root USER (DL3002)")
    if "8080" not in " ".join(r for _, w, r in final_ins if w == "EXPOSE").split():
        problem(final[0], "the final stage must EXPOSE 8080")
    health = [r for _, w, r in final_ins if w == "HEALTHCHECK"]
    if not health or "/health" not in health[-1]:
        problem(final[0], "the final stage needs a HEALTHCHECK on /health")
    volumes = " ".join(r for _, w, r in final_ins if w == "VOLUME")
    if "/models" not in volumes:
        problem(final[0], "the final stage must declare VOLUME /models")
    env = " ".join(r for _, w, r in final_ins if w == "ENV")
    if not re.search(r"THERMOCLINE_HOST=0\.0\.0\.0", env):
        problem(final[0], "set THERMOCLINE_HOST=0.0.0.0 with ENV (the server binds 127.0.0.1 by default)")
    if "ENTRYPOINT" not in words:
        problem(final[0], "the final stage needs an ENTRYPOINT")
    if users and not re.fullmatch(r"%d(:%d)?" % (RUNTIME_UID, RUNTIME_UID), users[-1]):
        problem(final[0], "USER %s: use the numeric %d:%d (Kubernetes' runAsNonRoot can verify only a "
                "numeric user)" % (users[-1], RUNTIME_UID, RUNTIME_UID))
    if len(stages) < 2:
        problem(1, "the image must be multi-stage (build, then a runtime stage without the toolchain)")
    for line, word, rest in final_ins:
        if word == "RUN" and re.search(r"apt-get\s+install|apt\s+install", rest):
            problem(line, "the runtime stage installs packages only through scripts/runtime_setup.sh "
                    "(those the binary's libraries need)")
    if health and re.search(r"\b(curl|wget)\b", health[-1]):
        problem(final[0], "the HEALTHCHECK calls curl/wget, which the runtime stage does not install")
    labels = " ".join(r for _, w, r in final_ins if w == "LABEL")
    for key, arg in (("org.opencontainers.image.version", "VERSION"), ("org.opencontainers.image.revision", "REVISION")):
        if not re.search(r"%s=\"?\$\{?%s\b" % (re.escape(key), arg), labels):
            problem(final[0], "LABEL %s=${%s} (an ARG) for reproducible, traceable tags" % (key, arg))
    if cuda:
        if len(stages) < 2:
            problem(1, "the CUDA image must be multi-stage (build in devel, run in runtime)")
        if not re.match(r"nvidia/cuda:[\w.]+-devel-", stages[0][1]):
            problem(stages[0][0], "build stage should be an nvidia/cuda *-devel-* image, got %s" % stages[0][1])
        if not re.match(r"nvidia/cuda:[\w.]+-(runtime|base)-", final[1]):
            problem(final[0], "final stage should be an nvidia/cuda *-runtime-* image, got %s" % final[1])
        if "CMAKE_CUDA_ARCHITECTURES=75;80;86;89;90" not in text:
            problem(1, "build for CMAKE_CUDA_ARCHITECTURES 75;80;86;89;90")
    return problems


def repo_steps(text):
    """The repo files the Dockerfile's RUN and COPY steps use, in order."""
    steps = []
    for _, word, rest in instructions(text):
        if word in ("RUN", "COPY"):
            steps += re.findall(r"(?:^|[\s/])((?:scripts|docker)/[\w.-]+\.sh)\b", rest)
    return steps


def setup_packages(text):
    """The package names of scripts/setup.sh's packages=( ... ) array."""
    m = re.search(r"^packages=\((.*?)^\)", text, re.S | re.M)
    return m.group(1).split() if m else []


def lint_noble(setup_text, noble_text):
    """Every package setup.sh installs is recorded as checked on Ubuntu 24.04."""
    recorded = {l.split()[0] for l in noble_text.splitlines() if l.strip() and not l.startswith("#")}
    packages = setup_packages(setup_text)
    if not packages:
        return ["scripts/setup.sh: no packages=( ... ) array found"]
    return ["scripts/setup.sh installs %s, not checked under Ubuntu 24.04's names (add it to "
            "tests/docker/ubuntu-noble-packages.txt after checking packages.ubuntu.com/noble)" % p
            for p in packages if p not in recorded]


def lint_dockerignore(text, cmake_text, install_text, steps, repo=None):
    """.dockerignore is an allowlist (`*`, then `!path` lines) that lets in
    what the build needs: the CMake subdirectories the image's configure
    reads (not tests/ or fuzz/, which are off), the bundled model, the
    scripts the Dockerfiles and scripts/install.sh run."""
    lines = [l.strip() for l in text.splitlines() if l.strip() and not l.strip().startswith("#")]
    if not lines or lines[0] != "*":
        return [".dockerignore: start with `*` and allow what the build needs with `!path` lines "
                "(docs, tests, build folders, .deps, .peers and gpu-carry then stay out)"]
    allowed = {l[1:].rstrip("/") for l in lines if l.startswith("!")}
    needed, depth = {"CMakeLists.txt", "cmake", "models/default.gguf", "models/default.md"}, 0
    for line in cmake_text.splitlines():
        line = line.strip()
        if re.match(r"if\s*\(\s*THERMOCLINE_(TESTS|FUZZ)", line):
            depth += 1
        elif depth and re.match(r"endif\s*\(", line):
            depth -= 1
        m = re.match(r"add_subdirectory\((\w+)\)", line)
        if m and not depth:
            needed.add(m.group(1))
    needed |= set(re.findall(r"(scripts/[\w.-]+\.sh)", install_text)) | set(steps)
    problems = [".dockerignore: the build needs %s: add !%s" % (n, n) for n in sorted(needed - allowed)]
    if repo is not None:
        problems += [".dockerignore: !%s names nothing in the repo" % a for a in sorted(allowed)
                     if not glob.glob(os.path.join(repo, a))]
    return problems


def check_script(problem, line, script, repo):
    if repo is None:
        return
    path = os.path.join(repo, script)
    if not os.path.isfile(path):
        problem(line, "%s does not exist" % script)
    elif not os.access(path, os.X_OK):
        problem(line, "%s is not executable" % script)
    ci = SCRIPTS_RUN_BY_CI.get(script)
    if ci is None:
        problem(line, "%s is not known to be run by CI (add it to SCRIPTS_RUN_BY_CI with the step that runs it)" % script)
    elif not re.search(re.escape(script.split("/")[-1]), open(os.path.join(repo, ci)).read()):
        problem(line, "%s: %s does not run it" % (script, ci))


def lint_compose(name, text, repo=None):
    problems = []
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        return ["%s: not YAML: %s" % (name, e)]
    services = (doc or {}).get("services") or {}
    service = services.get("thermocline")
    if not isinstance(service, dict):
        return ["%s: no services.thermocline" % name]
    build = service.get("build") or {}
    dockerfile = build.get("dockerfile") if isinstance(build, dict) else None
    if repo is not None and (not dockerfile or not os.path.isfile(os.path.join(repo, dockerfile))):
        problems.append("%s: build.dockerfile %r does not exist (context is the repo root)" % (name, dockerfile))
    if not any(str(p).endswith(":8080") for p in service.get("ports") or []):
        problems.append("%s: publish port 8080" % name)
    if not any(str(v).endswith(":/models") for v in service.get("volumes") or []):
        problems.append("%s: mount a models volume at /models" % name)
    if service.get("restart") not in ("always", "unless-stopped", "on-failure"):
        problems.append("%s: set a restart policy" % name)
    devices = (((service.get("deploy") or {}).get("resources") or {}).get("reservations") or {}).get("devices")
    if not devices or not any(d.get("driver") == "nvidia" and "gpu" in (d.get("capabilities") or [])
                              for d in devices):
        problems.append("%s: reserve the GPU (deploy.resources.reservations.devices: driver nvidia, "
                        "capabilities [gpu])" % name)
    grace = re.fullmatch(r"(\d+)s", str(service.get("stop_grace_period", "")))
    if not grace or int(grace.group(1)) <= 10:
        problems.append("%s: set stop_grace_period above shutdown_grace_s (10 s), e.g. 15s" % name)
    env = service.get("environment") or {}
    if isinstance(env, dict) and any(not str(k).startswith("THERMOCLINE_") for k in env):
        problems.append("%s: configure the server through THERMOCLINE_* variables only" % name)
    if not re.search(r"^#\s*open-webui:", text, re.M) or "OPENAI_API_BASE_URL: http://thermocline:8080/v1" not in text:
        problems.append("%s: keep the commented Open WebUI service pointed at http://thermocline:8080/v1" % name)
    return problems


def lint_repo(repo):
    read = lambda p: open(os.path.join(repo, p)).read()
    problems = lint_dockerfile("docker/Dockerfile", read("docker/Dockerfile"), repo)
    problems += lint_dockerfile("docker/Dockerfile.cuda", read("docker/Dockerfile.cuda"), repo, cuda=True)
    problems += lint_compose("docker/compose.yaml", read("docker/compose.yaml"), repo)
    cpu_steps, cuda_steps = repo_steps(read("docker/Dockerfile")), repo_steps(read("docker/Dockerfile.cuda"))
    if cpu_steps != cuda_steps:
        problems.append("docker/Dockerfile.cuda: its repo steps %s differ from docker/Dockerfile's %s "
                        "(keep them the same scripts)" % (cuda_steps, cpu_steps))
    for step in set(cpu_steps):
        if not os.access(os.path.join(repo, step), os.X_OK):
            problems.append("docker/Dockerfile: %s is missing or not executable" % step)
    problems += lint_noble(read("scripts/setup.sh"), read("tests/docker/ubuntu-noble-packages.txt"))
    problems += lint_dockerignore(read(".dockerignore"), read("CMakeLists.txt"), read("scripts/install.sh"),
                                  cpu_steps + cuda_steps, repo)
    return problems


BROKEN_DOCKERFILE = """FROM debian AS build
ADD . /src
WORKDIR src
RUN sudo apt-get install curl
FROM debian:latest
ENTRYPOINT thermocline serve
"""
BROKEN_COMPOSE = """services:
  thermocline:
    image: thermocline
    environment:
      HOST: 0.0.0.0
"""
BROKEN_RUNTIME = """FROM debian:12-slim AS build
RUN scripts/setup.sh
FROM debian:12-slim
RUN apt-get install -y --no-install-recommends curl && rm -rf /var/lib/apt/lists/*
USER thermocline
HEALTHCHECK CMD curl -fsS http://127.0.0.1:8080/health
"""
BROKEN_SETUP = """packages=(
  build-essential libnot-in-ubuntu-dev
)
"""
EXPECTED_SELF_TEST = ["numeric", "runtime_setup.sh (those", "curl/wget", "org.opencontainers.image.version",
                      "org.opencontainers.image.revision", "libnot-in-ubuntu-dev",
                      "DL3006", "DL3020", "DL3000", "DL3004", "DL3015", "DL3014", "DL3009", "DL3025", "DL3002",
                      "EXPOSE 8080", "HEALTHCHECK", "VOLUME /models", "THERMOCLINE_HOST", "multi-stage",
                      "port 8080", "/models", "restart", "reserve the GPU", "THERMOCLINE_* variables",
                      "Open WebUI", "stop_grace_period", "start with `*`", "add !cli",
                      "add !scripts/build.sh", "add !docker/healthcheck.sh"]


def self_test():
    found = lint_dockerfile("broken", BROKEN_DOCKERFILE, cuda=True) + lint_compose("broken", BROKEN_COMPOSE)
    found += lint_dockerfile("one-stage", "FROM nvidia/cuda:13.0.1-devel-ubuntu24.04\n", cuda=True)
    found += lint_dockerfile("runtime", BROKEN_RUNTIME)
    found += lint_noble(BROKEN_SETUP, "build-essential - main toolchain\n")
    found += lint_dockerignore(".git\nbuild*/\n", "", "", [])
    found += lint_dockerignore("*\n!cmake/\n", "add_subdirectory(cli)\nif(THERMOCLINE_TESTS)\n"
                               "  add_subdirectory(tests)\nendif()\n", "scripts/build.sh", ["docker/healthcheck.sh"])
    missing = [rule for rule in EXPECTED_SELF_TEST if not any(rule in p for p in found)]
    for p in found:
        print("  " + p)
    if missing:
        print("lint_docker self-test: rules not reported: %s" % ", ".join(missing))
        return 1
    print("lint_docker self-test: all %d rules reported" % len(EXPECTED_SELF_TEST))
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = lint_repo(sys.argv[1])
    for p in problems:
        print(p)
    print("lint_docker: %s" % ("%d problems" % len(problems) if problems else "docker/ is clean"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
