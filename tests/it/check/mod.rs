mod bounds;
mod cli;
mod cross_instance;
mod matrix;
mod no_tools;
