#!/bin/bash
# SPDX-License-Identifier: MIT
# packaging/k8s/fabmon-daemonset.yaml is valid YAML and says what matters:
# host network; not privileged, ALL capabilities dropped, BPF, PERFMON,
# NET_ADMIN and NET_RAW added and beyond them only what the drop to the
# config's user needs; /sys read-only and the database directory on host
# paths where the config looks for them, and /run/fabmon (the tc lock, one
# agent per network namespace) the host's too; liveness on /healthz and readiness
# on /readyz on the port the config listens on; resource requests and
# limits; the ConfigMap's config passes --check-config and the agent run on
# it answers both probes.
. tests/lib.sh

manifest=packaging/k8s/fabmon-daemonset.yaml
python3 -c 'import yaml' 2>/dev/null || skip "python3-yaml not installed (make deps)"

python3 - "$manifest" "$WORK/fabmon.conf" <<'EOF' || fail "$manifest: see above"
import configparser, sys, yaml

path, conf_out = sys.argv[1], sys.argv[2]
docs = list(yaml.safe_load_all(open(path)))
errors = []
def check(ok, what):
    if not ok:
        errors.append(what)

kinds = {d["kind"]: d for d in docs if d}
check(set(kinds) == {"Namespace", "ConfigMap", "DaemonSet"}, f"kinds {sorted(kinds)}")
ds, cm = kinds["DaemonSet"], kinds["ConfigMap"]
ns = kinds["Namespace"]["metadata"]["name"]
check(ds["metadata"]["namespace"] == ns and cm["metadata"]["namespace"] == ns, "namespaces differ")
spec = ds["spec"]["template"]["spec"]
check(ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items(),
      "selector does not match the pod labels")
check(spec.get("hostNetwork") is True, "hostNetwork is not true")
check(spec.get("dnsPolicy") == "ClusterFirstWithHostNet", "dnsPolicy with hostNetwork")
(c,) = spec["containers"]

# the config as the agent reads it
conf_text = cm["data"]["fabmon.conf"]
open(conf_out, "w").write(conf_text)
ini = configparser.ConfigParser()
ini.read_string(conf_text)
agent = ini["agent"]
port = int(agent["listen"].rsplit(":", 1)[1])

sc = c["securityContext"]
check(sc.get("privileged") is False, "privileged is not false")
check(sc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation is not false")
check(sc.get("readOnlyRootFilesystem") is True, "root filesystem writable")
check(sc.get("seccompProfile", {}).get("type") in ("RuntimeDefault", "Localhost"), "no seccomp profile")
caps = sc["capabilities"]
check(caps.get("drop") == ["ALL"], f"capabilities.drop {caps.get('drop')}")
added = set(caps.get("add", []))
kept = {"BPF", "PERFMON", "NET_ADMIN", "NET_RAW"}
drop_needs = {"SETUID", "SETGID", "SETPCAP", "CHOWN", "DAC_OVERRIDE"}
check(kept <= added, f"missing {sorted(kept - added)}")
check(added <= kept | drop_needs, f"more than needed: {sorted(added - kept - drop_needs)}")
check(not (added & drop_needs) or agent.get("user", "").strip(),
      "SETUID/SETGID/... added but the config names no user to drop to")
check("SYS_ADMIN" not in added, "SYS_ADMIN added")

ports = {p["name"]: p["containerPort"] for p in c["ports"]}
for probe, want in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
    get = c.get(probe, {}).get("httpGet", {})
    check(get.get("path") == want, f"{probe} path {get.get('path')}, expected {want}")
    p = get.get("port")
    check(ports.get(p, p) == port, f"{probe} port {p} is not the config's {port}")

res = c.get("resources", {})
for kind in ("requests", "limits"):
    for r in ("cpu", "memory"):
        check(r in res.get(kind, {}), f"no resources.{kind}.{r}")

# config mount, sysfs and the database on host paths where the config says
cmd = c["command"] + c.get("args", [])
check(cmd[:2] == ["/usr/bin/fabmon", "agent"], f"command {cmd}")
conf_path = cmd[cmd.index("--config") + 1]
vols = {v["name"]: v for v in spec["volumes"]}
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
def volume_at(path):
    best = max((m for m in mounts if path == m or path.startswith(m.rstrip("/") + "/")),
               key=len, default=None)
    return (mounts[best], vols[mounts[best]["name"]]) if best else (None, None)
m, v = volume_at(conf_path)
check(v is not None and v.get("configMap", {}).get("name") == cm["metadata"]["name"],
      f"{conf_path} is not from the ConfigMap")
m, v = volume_at(agent["sysfs_root"])
check(v is not None and v.get("hostPath", {}).get("path") == "/sys" and m.get("readOnly") is True,
      f"sysfs_root {agent['sysfs_root']} is not the host's /sys, read-only")
m, v = volume_at(agent["db"])
check(v is not None and "hostPath" in v and not m.get("readOnly"),
      f"db {agent['db']} is not on a writable host path")
m, v = volume_at("/run/fabmon/tc-1.lock")
check(v is not None and v.get("hostPath", {}).get("path") == "/run/fabmon" and not m.get("readOnly"),
      "the tc lock's /run/fabmon is not the host's, writable")

for e in errors:
    print("manifest:", e, file=sys.stderr)
print(f"{path}: {len(docs)} documents; capabilities added {sorted(added)}; probes on :{port}")
sys.exit(1 if errors else 0)
EOF

# its user, database and sysfs are the image's and the pod's (--check-config
# checks them on the host it runs on): this host's instead
out=$("$FABMON" agent --config "$WORK/fabmon.conf" --db "$WORK/fabmon.db" --sysfs-root /sys \
	--user "" --check-config 2>&1) || fail "the ConfigMap's config: $out"
# the probes' endpoints answer, on the ConfigMap's config with this host's paths
port=$(free_port)
start_agent "$port" --config "$WORK/fabmon.conf" --db "$WORK/fabmon.db" --sysfs-root /sys \
	--user "" --collectors netdev
for p in /healthz /readyz; do
	code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port$p")
	[ "$code" = 200 ] || fail "GET $p: $code"
done
echo "ConfigMap config OK; /healthz and /readyz answer 200"
exit 0
