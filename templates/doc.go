// Package templates holds the test of the OpenFaaS templates beside it (make test-templates).
//
// There is no Docker engine in CI or on a developer's machine, so the test does natively
// what each template's Dockerfile does: it lays out a directory as the image's working
// directory (the template's entry files and its function/ skeleton), installs the library
// from this repository instead of the registry, runs the skeleton's own unit test, and then
// starts the watchdog with the environment, CMD and HEALTHCHECK parsed from the Dockerfile's
// final stage. The commands are read from the Dockerfile, not copied into the test, so a
// Dockerfile that drifts from what was tested fails here. See templates/README.md.
package templates
