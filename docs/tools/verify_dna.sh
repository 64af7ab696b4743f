#!/bin/sh
# Recompute a manifest's DNA from its stored section digests with b3sum (and jq to read them).
# Both lines printed are equal when dna.value is the hash of dna.sections.
set -eu
manifest=$1
printf '{"sections":{"code":"%s","config":"%s","data":"%s","environment":"%s","hardware":"%s","runtime":"%s","training":"%s"},"version":%s}' \
    $(jq -r '.dna.sections | .code, .config, .data, .environment, .hardware, .runtime, .training' "$manifest") \
    "$(jq -r .dna.version "$manifest")" | b3sum --no-names
jq -r .dna.value "$manifest"
