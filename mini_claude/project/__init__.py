"""What a project folder brings: instructions, skills, agent types, trust, the .env rule."""
