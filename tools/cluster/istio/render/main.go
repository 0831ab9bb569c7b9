// Command render prints the Kubernetes objects Istio's installer makes for an IstioOperator file
// (the charts compiled into the istio.io/istio module, rendered by its own installer library), one
// YAML document each: what `istioctl manifest generate -f FILE` prints, without istioctl's other
// packages. The test cluster (tests/cluster/operators.sh) applies them as an administrator's
// installation of Istio.
//
// Usage: render ISTIOOPERATOR.yaml
package main

import (
	"fmt"
	"os"

	"istio.io/istio/operator/pkg/render"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: render ISTIOOPERATOR.yaml")
		os.Exit(2)
	}
	sets, _, err := render.GenerateManifest([]string{os.Args[1]}, nil, false, nil, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "render: %v\n", err)
		os.Exit(1)
	}
	for _, set := range sets {
		for _, m := range set.Manifests {
			fmt.Printf("---\n# component %s\n%s\n", set.Component, m.Content)
		}
	}
}
