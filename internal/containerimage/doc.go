// Package containerimage holds the tests of IronVise's own container image:
// the Containerfile at the repository root, built by scripts/build-image.sh
// (`make image`) and documented in docs/operate/container.md.
//
// It has no code of its own. The tests run the image with podman's default
// security options plus only the flags that page documents, in each of the
// two ways the native tier runs inside a container (a user namespace, and
// container mode), and check what a user relies on: `sandbox doctor`
// passes, `exec` runs ordinary work while the escape suite's key cases fail
// closed, and `serve` answers. They run when IRONVISE_TEST_PODMAN=1 (set by
// .ci/run), on the image IRONVISE_TEST_IMAGE names or, without it, on one
// they build.
package containerimage
