#!/usr/bin/env bash
# Suite image-arm64: the arm64 image, built on this x86-64 machine and checked under qemu-user
# (test/image/image_test.sh with ALLOT_IMAGE_ARCH=arm64), as the README's install section
# builds it. Long form only: it debootstraps an arm64 base under emulation (about 5 minutes)
# and compiles allot in the image build (10-20 minutes on 2 cores), so it runs only with
# ALLOT_ARM64_IMAGE=1 and is skipped (exit 77) otherwise:
#
#   ALLOT_ARM64_IMAGE=1 scripts/test image-arm64
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
if [[ "${ALLOT_ARM64_IMAGE:-0}" != 1 ]]; then
  echo "SKIP: the arm64 image is built only with ALLOT_ARM64_IMAGE=1 (long form, 15-25 minutes)"
  exit 77
fi
ALLOT_IMAGE_ARCH=arm64 ALLOT_IMAGE_TAG=allot:0.1.0-arm64 test/image/image_test.sh
