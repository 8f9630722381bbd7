//! The Kubernetes manifests in `loadtests/k8s/`: valid YAML (parsed by
//! Python's PyYAML: there is no YAML crate in the tree; `support::need`
//! installs it where missing, and without it the test fails), an
//! Indexed Job whose N is the same everywhere, the segment taken from
//! `JOB_COMPLETION_INDEX`, and a ConfigMap whose plan elicitkit accepts.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/loadtests/k8s");
const FILES: [&str; 4] = [
    "pvc.yaml",
    "configmap-plan.yaml",
    "job-load.yaml",
    "job-merge.yaml",
];

/// Every document of every manifest as JSON (PyYAML parses them).
fn parsed() -> Vec<(String, Value)> {
    crate::support::need::need("pyyaml");
    let script = "import json, sys, yaml\n\
                  docs = list(yaml.safe_load_all(open(sys.argv[1])))\n\
                  print(json.dumps(docs))\n";
    let mut out = Vec::new();
    for f in FILES {
        let path = Path::new(DIR).join(f);
        let o = Command::new("python3")
            .args(["-c", script])
            .arg(&path)
            .output()
            .expect("run python3");
        assert!(
            o.status.success(),
            "{f} is not valid YAML: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let docs: Vec<Value> = serde_json::from_slice(&o.stdout).expect("json");
        assert_eq!(docs.len(), 1, "{f}: one document");
        out.push((f.to_string(), docs.into_iter().next().unwrap()));
    }
    out
}

/// The load Job's container script (`sh -c` runs it as the pod's PID 1).
pub(super) fn job_script() -> String {
    let docs = parsed();
    let job = &docs.iter().find(|(n, _)| n == "job-load.yaml").unwrap().1;
    job["spec"]["template"]["spec"]["containers"][0]["args"][0]
        .as_str()
        .expect("the container's script")
        .to_owned()
}

fn env_of<'a>(container: &'a Value, name: &str) -> Option<&'a str> {
    container["env"]
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)?["value"]
        .as_str()
}

#[test]
fn the_manifests_parse_and_agree() {
    // Checks that need no YAML parser: the text has what the Job needs.
    let job_text = std::fs::read_to_string(Path::new(DIR).join("job-load.yaml")).unwrap();
    for needed in [
        "completionMode: Indexed",
        "JOB_COMPLETION_INDEX + 1",
        "--segment \"$I/$SEGMENTS\"",
        "--start-at \"$START_AT\"",
        "claimName: elicitkit-results",
        "name: elicitkit-plan",
    ] {
        assert!(job_text.contains(needed), "job-load.yaml lacks {needed:?}");
    }
    let merge_text = std::fs::read_to_string(Path::new(DIR).join("job-merge.yaml")).unwrap();
    assert!(merge_text.contains("elicitkit report merge"));
    let docs = parsed();
    let get = |f: &str| &docs.iter().find(|(n, _)| n == f).unwrap().1;

    let job = get("job-load.yaml");
    assert_eq!(job["kind"], "Job");
    assert_eq!(job["apiVersion"], "batch/v1");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().expect("completions");
    assert_eq!(
        spec["parallelism"].as_u64(),
        Some(n),
        "parallelism = completions"
    );
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    // SIGTERM, then SIGKILL after the grace: room for the report
    // (load::signals runs the script and stops it with SIGTERM).
    assert!(
        pod["terminationGracePeriodSeconds"]
            .as_u64()
            .is_some_and(|g| g >= 30),
        "{:#}",
        pod["terminationGracePeriodSeconds"]
    );
    let c = &pod["containers"][0];
    assert_eq!(env_of(c, "SEGMENTS"), Some(n.to_string().as_str()));
    assert!(env_of(c, "START_AT").is_some() && env_of(c, "TARGET").is_some());
    assert_eq!(
        job["metadata"]["annotations"]["elicitkit.dev/start-at"].as_str(),
        env_of(c, "START_AT"),
        "the annotation and the env carry one start time"
    );
    let vols: Vec<&str> = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| {
            v["configMap"]["name"]
                .as_str()
                .or(v["persistentVolumeClaim"]["claimName"].as_str())
        })
        .collect();
    assert_eq!(vols, ["elicitkit-plan", "elicitkit-results"]);

    let pvc = get("pvc.yaml");
    assert_eq!(pvc["kind"], "PersistentVolumeClaim");
    assert_eq!(pvc["metadata"]["name"], "elicitkit-results");
    assert_eq!(pvc["spec"]["accessModes"][0], "ReadWriteMany");

    let merge = get("job-merge.yaml");
    assert_eq!(merge["kind"], "Job");
    let mc = &merge["spec"]["template"]["spec"]["containers"][0];
    assert!(mc["args"][0].as_str().unwrap().contains("report merge"));
    assert_eq!(
        merge["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
        "elicitkit-results"
    );

    // The ConfigMap's plan is one elicitkit runs, split N ways.
    let cm = get("configmap-plan.yaml");
    assert_eq!(cm["metadata"]["name"], "elicitkit-plan");
    let text = cm["data"]["plan.toml"].as_str().expect("plan.toml");
    let plan = elicitkit::load::spec::parse::parse_plan(text, "configmap-plan.yaml", "k8s")
        .unwrap_or_else(|e| panic!("the ConfigMap's plan: {e}"));
    for i in 1..=n as u32 {
        let seg = elicitkit::load::spec::segment::Segment::new(i, n as u32).unwrap();
        plan.clone()
            .split(seg)
            .unwrap_or_else(|e| panic!("segment {i}/{n}: {e}"));
    }
}
