mod checks;
mod loads;
