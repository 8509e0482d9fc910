package kafka_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// javaLib is where Kafka's 4.4.0 jars are (deploy/kafka-peer/setup.sh
// puts them there); KAFKA_JAVA_LIB overrides it.
func javaLib(t *testing.T) string {
	t.Helper()
	lib := os.Getenv("KAFKA_JAVA_LIB")
	if lib == "" {
		lib = "/tmp/aerostream-kafka-peer/lib-4.4.0"
	}
	if _, err := os.Stat(filepath.Join(lib, "kafka-clients-4.4.0.jar")); err != nil {
		t.Fatalf("Kafka's Java clients: %v (run deploy/kafka-peer/setup.sh, or set KAFKA_JAVA_LIB)", err)
	}
	return lib
}

// TestClientJavaGroups runs testdata/java/GroupsCheck.java with Kafka's
// own kafka-clients 4.4.0: a group.protocol=consumer (KIP-848) consumer
// group of two members, then two KafkaShareConsumers sharing one
// partition whose rejected records reach the dead-letter topic with
// their headers. The program is compiled once, here.
func TestClientJavaGroups(t *testing.T) {
	gate(t)
	lib := javaLib(t)
	classes := t.TempDir()
	cp := lib + "/*"
	run(t, "", "javac", "-cp", cp, "-d", classes, "testdata/java/GroupsCheck.java")
	p, broker := serve(t, filepath.Join(t.TempDir(), "data"))
	jcp := classes + string(os.PathListSeparator) + cp
	for _, args := range [][]string{
		{"consumer", broker, "java-848", "java-848-group", "200"},
		{"share", broker, "java-share", "java-share-group", "200", "20", "java-share-dlq"},
	} {
		out := run(t, "", "java", append([]string{"-cp", jcp, "GroupsCheck"}, args...)...)
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "OK ") || strings.Contains(l, "records once each") || strings.HasPrefix(l, "dead-letter topic") {
				lines = append(lines, l)
			}
		}
		t.Log(strings.Join(lines, "\n"))
		if !strings.Contains(out, "OK "+args[0]) {
			t.Fatalf("GroupsCheck %s did not pass:\n%s", args[0], out)
		}
	}
	p.stop(t)
}
