mod bounds;
mod cli;
mod cross_instance;
mod evidence;
mod matrix;
mod no_tools;
