// Package deploytest holds no code, only tests of what the repository ships
// for deployment: the watchdog image recipe (deploy/watchdog), the Kubernetes,
// Knative, OpenFaaS and autoscaling manifests (deploy/kubernetes) and the
// Grafana dashboard (deploy/grafana). They build the watchdog the way the
// Dockerfile does, run it with this test binary as its worker, and hold every
// path, port, setting and metric the files name to what the watchdog really
// serves, so the files cannot drift from it.
package deploytest
