// vto-health-check evaluates vto's objects the way GitOps tools do, with the libraries they embed, so
// that tests assert what Flux and Argo CD will show rather than what vto meant to write.
//
//	vto-health-check kstatus FILE...        kstatus (sigs.k8s.io/cli-utils): Current, InProgress, Failed, ...
//	vto-health-check argocd SCRIPT FILE...  an Argo CD resource health check (Lua, under gopher-lua)
//
// FILE is one object in YAML or JSON ("-" reads stdin). One line per file: "STATUS<TAB>MESSAGE".
package main

import (
	"fmt"
	"io"
	"os"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) < 3 {
		fail("usage: vto-health-check kstatus FILE... | argocd SCRIPT FILE...")
	}
	switch os.Args[1] {
	case "kstatus":
		for _, file := range os.Args[2:] {
			// Unstructured's own decoding, as a client reads objects: integers as int64, as kstatus expects.
			object := &unstructured.Unstructured{}
			if err := object.UnmarshalJSON(toJSON(file)); err != nil {
				fail("%s: %v", file, err)
			}
			result, err := status.Compute(object)
			if err != nil {
				fail("%s: %v", file, err)
			}
			fmt.Printf("%s\t%s\n", result.Status, result.Message)
		}
	case "argocd":
		if len(os.Args) < 4 {
			fail("usage: vto-health-check argocd SCRIPT FILE...")
		}
		script, err := os.ReadFile(os.Args[2])
		if err != nil {
			fail("%v", err)
		}
		for _, file := range os.Args[3:] {
			health, message := runHealthScript(string(script), load(file))
			fmt.Printf("%s\t%s\n", health, message)
		}
	default:
		fail("unknown command %q", os.Args[1])
	}
}

func load(file string) map[string]interface{} {
	object := map[string]interface{}{}
	if err := yaml.Unmarshal(toJSON(file), &object); err != nil {
		fail("%s: %v", file, err)
	}
	return object
}

func toJSON(file string) []byte {
	var data []byte
	var err error
	if file == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		fail("%v", err)
	}
	converted, err := yaml.YAMLToJSON(data)
	if err != nil {
		fail("%s: %v", file, err)
	}
	return converted
}

// As Argo CD runs a health script (util/lua in argo-cd): a fresh state with the package, base and
// table libraries only (Argo CD adds a restricted os, which vto's scripts do not use), the object as
// the global `obj`, and the script's returned table read for `status` and `message`.
func runHealthScript(script string, object map[string]interface{}) (string, string) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		l.Push(l.NewFunction(lib.open))
		l.Push(lua.LString(lib.name))
		l.Call(1, 0)
	}
	l.SetGlobal("obj", toLua(l, object))
	if err := l.DoString(script); err != nil {
		fail("lua: %v", err)
	}
	result, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		fail("the health script returned %s, not a table", l.Get(-1).Type())
	}
	return lua.LVAsString(result.RawGetString("status")), lua.LVAsString(result.RawGetString("message"))
}

func toLua(l *lua.LState, value interface{}) lua.LValue {
	switch v := value.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case []interface{}:
		t := l.NewTable()
		for _, item := range v {
			t.Append(toLua(l, item))
		}
		return t
	case map[string]interface{}:
		t := l.NewTable()
		for key, item := range v {
			t.RawSetString(key, toLua(l, item))
		}
		return t
	default:
		fail("unexpected %T in the object", value)
		return lua.LNil
	}
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "vto-health-check: "+format+"\n", args...)
	os.Exit(2)
}
