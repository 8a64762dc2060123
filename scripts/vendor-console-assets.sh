#!/usr/bin/env bash
# Copies the console's two front-end libraries from their npm packages into the Python package
# (src/odradek/console/static/), so the console needs no CDN and no build step at run time.
# Run it only to change a version; its output is committed. Needs npm and the npm registry.
#   htmx.org  (0BSD)  dist/htmx.min.js            — refreshes and forms without page reloads
#   uplot     (MIT)   dist/uPlot.iife.min.js, .css — the lag and throughput charts (~50 KB)
set -euo pipefail

HTMX_VERSION=2.0.11
UPLOT_VERSION=1.6.32
here=$(cd "$(dirname "$0")/.." && pwd)
static="$here/src/odradek/console/static"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cd "$work"
npm pack --silent "htmx.org@$HTMX_VERSION" "uplot@$UPLOT_VERSION" >/dev/null
mkdir htmx uplot
tar -xzf "htmx.org-$HTMX_VERSION.tgz" -C htmx
tar -xzf "uplot-$UPLOT_VERSION.tgz" -C uplot
cp htmx/package/dist/htmx.min.js "$static/htmx.min.js"
cp htmx/package/LICENSE "$static/htmx.LICENSE.txt"
cp uplot/package/dist/uPlot.iife.min.js "$static/uPlot.iife.min.js"
cp uplot/package/dist/uPlot.min.css "$static/uPlot.min.css"
cp uplot/package/LICENSE "$static/uPlot.LICENSE.txt"
echo "vendored htmx $HTMX_VERSION and uPlot $UPLOT_VERSION into $static"
