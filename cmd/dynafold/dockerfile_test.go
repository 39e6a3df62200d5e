package main

import (
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/dynafold/dynafold/internal/docexamples"
	"github.com/dynafold/dynafold/internal/testenv"
)

// dockerfileFacts is what the tests read from the Dockerfile.
type dockerfileFacts struct {
	from       []string // every stage's base image
	user       string
	workdir    string // the final stage's
	entrypoint []string
	expose     []string
	build      []string // the words of the RUN line that runs go build
}

func dockerfile(t *testing.T) dockerfileFacts {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	require.NoError(t, err)
	var f dockerfileFacts
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(line, " ")
		switch strings.ToUpper(instr) {
		case "FROM":
			f.from = append(f.from, strings.Fields(rest)[0])
			f.workdir = ""
		case "USER":
			f.user = rest
		case "WORKDIR":
			f.workdir = rest
		case "ENTRYPOINT":
			require.NoError(t, json.Unmarshal([]byte(rest), &f.entrypoint), "ENTRYPOINT in exec form")
		case "EXPOSE":
			f.expose = append(f.expose, strings.Fields(rest)...)
		case "RUN":
			if words := docexamples.Split(rest); slices.Contains(words, "build") && slices.Contains(words, "go") {
				f.build = words
			}
		}
	}
	return f
}

// makeStatic is the recipe of the Makefile's static target, as words.
func makeStatic(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^static:\n\t(.+)$`).FindStringSubmatch(string(data))
	require.NotNil(t, m, "the Makefile has a static target")
	return docexamples.Split(m[1])
}

// withoutOutput drops -o and its value, which differ between the two.
func withoutOutput(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		if words[i] == "-o" {
			i++
			continue
		}
		out = append(out, words[i])
	}
	return out
}

// TestDockerfile: a multi-stage build whose image runs the binary as a
// non-root user on distroless (or scratch), the binary built static as
// `make static` builds it, and the metrics port the manifests use exposed.
func TestDockerfile(t *testing.T) {
	f := dockerfile(t)
	require.GreaterOrEqual(t, len(f.from), 2, "multi-stage: a build stage and the image")
	final := f.from[len(f.from)-1]
	require.True(t, final == "scratch" || strings.HasPrefix(final, "gcr.io/distroless/static"), "the image is distroless/static or scratch, not %s", final)
	require.NotEmpty(t, f.user)
	uid, _, _ := strings.Cut(f.user, ":")
	require.NotContains(t, []string{"0", "root"}, uid, "USER is not root")
	require.Equal(t, []string{"/dynafold"}, f.entrypoint)
	require.NotEmpty(t, f.workdir)

	require.NotEmpty(t, f.build, "a RUN line with go build")
	require.Contains(t, f.build, "CGO_ENABLED=0", "static: no cgo")
	require.Contains(t, f.build, "-trimpath")
	require.Equal(t, withoutOutput(makeStatic(t)), withoutOutput(f.build), "the Dockerfile builds the binary as make static does")

	m := loadKubeManifests(t)
	port := ""
	for _, p := range m.deployment.Spec.Template.Spec.Containers[0].Ports {
		port = strconv.Itoa(int(p.ContainerPort))
	}
	require.Contains(t, f.expose, port, "the image exposes the metrics port the Deployment uses")
}

// TestDockerfileBuildsAStaticBinary runs the Dockerfile's build line (no
// Docker needed) and checks the binary: no program interpreter and no
// shared library (static), built without cgo and with -trimpath.
func TestDockerfileBuildsAStaticBinary(t *testing.T) {
	testenv.FullTierOnly(t, "a build of the whole CLI with other flags than the test binary's (minutes on two cores)")
	words := dockerfile(t).build
	bin := filepath.Join(t.TempDir(), "dynafold")
	var env []string
	for len(words) > 0 && strings.Contains(words[0], "=") {
		env = append(env, words[0])
		words = words[1:]
	}
	for i := range words {
		if words[i] == "-o" {
			words[i+1] = bin
		}
	}
	cmd := exec.Command(words[0], words[1:]...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s\n%s", strings.Join(dockerfile(t).build, " "), out)

	f, err := elf.Open(bin)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		require.NotEqual(t, elf.PT_INTERP, p.Type, "a static binary has no program interpreter")
	}
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.Empty(t, libs, "a static binary needs no shared library")
	bi, err := buildinfo.ReadFile(bin)
	require.NoError(t, err)
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	require.Equal(t, "0", settings["CGO_ENABLED"])
	require.Equal(t, "true", settings["-trimpath"])
}
