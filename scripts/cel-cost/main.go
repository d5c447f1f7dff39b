// cel-cost prints what the TrainingRun CRD's CEL rules cost the API server on every write of a run (a
// status write or a finalizer patch included): the API server's own validator (k8s.io/apiextensions-
// apiserver, the version tests/cluster builds) on the bench's run, whole and rule by rule. Run it with
// scripts/cel-cost.sh. CPU time of this process, so the figures hold on a busy machine better than a
// wall clock's; compare figures of one run only.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"syscall"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// The bench's run (tests/support/operator_stack.cpp simpleRunManifest), as a write after its creation sees it.
const benchRun = `{"apiVersion":"vto.dev/v1beta1","kind":"TrainingRun","metadata":{"name":"run-1","namespace":"bench","finalizers":["vto.dev/finalizer"]},"spec":{"framework":"pytorch","trainer":{"container":{"imageUri":"us-central1-docker.pkg.dev/test-project/train/model:1"}},"resources":{"machineType":"n1-standard-4"},"baseOutputDirectory":"gs://test-bucket/bench/run-1"}}`

func cpuMicros() float64 {
	var usage syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	return float64(usage.Utime.Nano()+usage.Stime.Nano()) / 1e3
}

// Microseconds of CPU per validation of an update of the bench's run (old and new objects equal).
func perWrite(schema *apiextensionsv1.JSONSchemaProps, writes int) float64 {
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(schema, &internal, nil); err != nil {
		panic(err)
	}
	structural, err := structuralschema.NewStructural(&internal)
	if err != nil {
		panic(err)
	}
	validator := cel.NewValidator(structural, true, celconfig.PerCallLimit)
	var object, old map[string]interface{}
	json.Unmarshal([]byte(benchRun), &object)
	json.Unmarshal([]byte(benchRun), &old)
	validate := func() {
		if errs, _ := validator.Validate(context.Background(), nil, structural, object, old, celconfig.RuntimeCELCostBudget); len(errs) > 0 {
			fmt.Fprintln(os.Stderr, "cel-cost: the bench's run is refused:", errs)
			os.Exit(1)
		}
	}
	for i := 0; i < 50; i++ {
		validate()
	}
	start := cpuMicros()
	for i := 0; i < writes; i++ {
		validate()
	}
	return (cpuMicros() - start) / float64(writes)
}

// Calls visit for each node's rules, in a stable order; keep(i) says whether the i-th rule stays.
func filterRules(node *apiextensionsv1.JSONSchemaProps, path string, next *int, keep func(int) bool, seen func(string, string)) {
	var kept apiextensionsv1.ValidationRules
	for _, rule := range node.XValidations {
		if seen != nil {
			seen(path, rule.Rule)
		}
		if keep(*next) {
			kept = append(kept, rule)
		}
		*next++
	}
	node.XValidations = kept
	names := make([]string, 0, len(node.Properties))
	for name := range node.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		child := node.Properties[name]
		filterRules(&child, path+"."+name, next, keep, seen)
		node.Properties[name] = child
	}
	if node.Items != nil && node.Items.Schema != nil {
		filterRules(node.Items.Schema, path+"[]", next, keep, seen)
	}
}

func load(path string) *apiextensionsv1.JSONSchemaProps {
	raw, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		panic(err)
	}
	for _, version := range crd.Spec.Versions {
		if version.Storage {
			return version.Schema.OpenAPIV3Schema
		}
	}
	panic("no storage version in " + path)
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cel-cost CRD.yaml")
		os.Exit(2)
	}
	crd := os.Args[1]
	whole := perWrite(load(crd), 3000)
	var paths, rules []string
	count := 0
	filterRules(load(crd), "", &count, func(int) bool { return true }, func(path, rule string) {
		paths = append(paths, path)
		rules = append(rules, rule)
	})
	fmt.Printf("CEL per write of the bench's run: %.0f us of CPU (%d rules in the CRD's storage version)\n", whole, count)
	type cost struct {
		micros float64
		index  int
	}
	none := load(crd)
	n := 0
	filterRules(none, "", &n, func(int) bool { return false }, nil)
	base := perWrite(none, 3000)
	var costs []cost
	for i := 0; i < count; i++ {
		schema := load(crd)
		n := 0
		filterRules(schema, "", &n, func(j int) bool { return j == i }, nil)
		if micros := perWrite(schema, 500) - base; micros > 3 {
			costs = append(costs, cost{micros, i})
		}
	}
	sort.Slice(costs, func(a, b int) bool { return costs[a].micros > costs[b].micros })
	fmt.Println("the rules that cost it more than 3 us, each alone (a rule on an absent field costs nothing):")
	for _, c := range costs {
		rule := rules[c.index]
		if len(rule) > 90 {
			rule = rule[:90] + "..."
		}
		fmt.Printf("  %6.1f us  %s  %s\n", c.micros, paths[c.index], rule)
	}
}
