#!/usr/bin/env bash
# Installs what Thermocline needs to build and test on Debian 12, from Debian
# packages (and, for the llama.cpp oracle, SDK and web page tests, npm
# packages into .deps/npm). Works as root or through sudo; safe to run any
# number of times.
#   scripts/setup.sh              build + test dependencies
#   scripts/setup.sh --no-npm     skip the npm packages (and chromium)
#   scripts/setup.sh --no-browser skip chromium (the web page's browser test)
set -euo pipefail
cd "$(dirname "$0")/.."

want_npm=1
want_browser=1
for arg in "$@"; do
  case "$arg" in
    --no-npm) want_npm=0 ;;
    --no-browser) want_browser=0 ;;
    *) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi

packages=(
  build-essential cmake ninja-build pkg-config git
  libcpp-httplib-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
  catch2 libcli11-dev libtomlplusplus-dev libpng-dev libturbojpeg0-dev libwebp-dev libgif-dev
  curl ca-certificates python3-jinja2 python3-yaml
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: Debian packages already installed"
fi

# Debian's chromium, driven headless by puppeteer-core (an npm package,
# below) in the web page's browser test (tests/integration/webui), so only
# with the npm packages. Optional: that test skips with a message when it is
# absent.
if [ "$want_browser" -eq 1 ] && [ "$want_npm" -eq 1 ]; then
  if dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
    echo "setup: chromium already installed"
  else
    echo "setup: installing chromium"
    export DEBIAN_FRONTEND=noninteractive
    if ! { $SUDO apt-get update -q && $SUDO apt-get install -y -q --no-install-recommends chromium; }; then
      echo "setup: warning: chromium install failed; the web page's browser test will be skipped" >&2
    fi
  fi
fi

# llama.cpp as an oracle and a benchmark baseline, from npm into .deps/npm:
# node-llama-cpp 3.22.1 with its prebuilt llama.cpp CPU build
# @node-llama-cpp/linux-x64 3.22.1 (libllama, libggml*), which tests/oracle
# dlopens and bench/ runs. Installed with --omit=optional (node-llama-cpp's
# other platform binaries are optional dependencies) and --ignore-scripts (its
# postinstall would look for a build); at run time bench/llamacpp/run.mjs asks
# for the prebuilt CPU binary with build "never" and skipDownload, so nothing
# is downloaded or compiled. Optional: the tests that need it skip with a
# message when it is absent.
nlc_version=3.22.1
npm_installed_version() {  # prints the installed version of package $1, if any
  node -e 'try { process.stdout.write(require(process.argv[1]).version) } catch (e) {}' \
    "$PWD/.deps/npm/node_modules/$1/package.json" 2>/dev/null || true
}
if [ "$want_npm" -eq 1 ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "setup: installing nodejs and npm"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q
    $SUDO apt-get install -y -q --no-install-recommends nodejs npm
  fi
  oracle_lib=.deps/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/libllama.v0.5.0.so
  if [ -f "$oracle_lib" ] &&
     [ "$(npm_installed_version node-llama-cpp)" = "$nlc_version" ] &&
     [ "$(npm_installed_version @node-llama-cpp/linux-x64)" = "$nlc_version" ]; then
    echo "setup: llama.cpp oracle (node-llama-cpp $nlc_version) already installed"
  else
    echo "setup: installing the llama.cpp oracle (npm node-llama-cpp@$nlc_version," \
         "@node-llama-cpp/linux-x64@$nlc_version) into .deps/npm"
    mkdir -p .deps/npm
    [ -f .deps/npm/package.json ] || echo '{"private":true}' > .deps/npm/package.json
    if ! npm install --prefix .deps/npm --omit=optional --ignore-scripts --no-audit --no-fund --save-exact \
         "node-llama-cpp@$nlc_version" "@node-llama-cpp/linux-x64@$nlc_version"; then
      echo "setup: warning: npm install failed; oracle tests will be skipped" >&2
    fi
  fi
  # The official OpenAI Node SDK, which the server's integration tests drive.
  openai_version=4.104.0
  if [ "$(npm_installed_version openai)" = "$openai_version" ]; then
    echo "setup: OpenAI Node SDK $openai_version already installed"
  else
    echo "setup: installing the OpenAI Node SDK (npm openai@$openai_version) into .deps/npm"
    mkdir -p .deps/npm
    [ -f .deps/npm/package.json ] || echo '{"private":true}' > .deps/npm/package.json
    if ! npm install --prefix .deps/npm --omit=optional --ignore-scripts --no-audit --no-fund --save-exact \
         "openai@$openai_version"; then
      echo "setup: warning: npm install failed; OpenAI SDK tests will be skipped" >&2
    fi
  fi
  # The official Ollama JavaScript client, which drives the server's Ollama API
  # (/api/*) in the integration tests as the openai package drives /v1.
  ollama_version=0.6.4
  if [ "$(npm_installed_version ollama)" = "$ollama_version" ]; then
    echo "setup: Ollama JavaScript client $ollama_version already installed"
  else
    echo "setup: installing the Ollama JavaScript client (npm ollama@$ollama_version) into .deps/npm"
    mkdir -p .deps/npm
    [ -f .deps/npm/package.json ] || echo '{"private":true}' > .deps/npm/package.json
    if ! npm install --prefix .deps/npm --omit=optional --ignore-scripts --no-audit --no-fund --save-exact \
         "ollama@$ollama_version"; then
      echo "setup: warning: npm install failed; Ollama client tests will be skipped" >&2
    fi
  fi
  # puppeteer-core drives Debian's chromium (it downloads no browser of its own).
  puppeteer_version=24.43.1
  if [ "$(npm_installed_version puppeteer-core)" = "$puppeteer_version" ]; then
    echo "setup: puppeteer-core $puppeteer_version already installed"
  else
    echo "setup: installing puppeteer-core (npm puppeteer-core@$puppeteer_version) into .deps/npm"
    mkdir -p .deps/npm
    [ -f .deps/npm/package.json ] || echo '{"private":true}' > .deps/npm/package.json
    if ! npm install --prefix .deps/npm --omit=optional --ignore-scripts --no-audit --no-fund --save-exact \
         "puppeteer-core@$puppeteer_version"; then
      echo "setup: warning: npm install failed; the web page's browser test will be skipped" >&2
    fi
  fi
fi
echo "setup: done"
