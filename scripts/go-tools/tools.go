//go:build tools

// Package tools pins the versions of the Go programs that scripts/bootstrap.sh builds.
package tools

import (
	_ "github.com/fsouza/fake-gcs-server"
	_ "helm.sh/helm/v3/cmd/helm"
)
