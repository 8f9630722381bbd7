mod capacity;
mod cli;
mod instances;
mod k8s_manifests;
mod principals;
mod report_html;
mod segment;
mod shape;
